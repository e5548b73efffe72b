//! The answer tables in `results/VERDICT.md` and the README are generated: this fails
//! when they no longer match what `hash-bench report` makes of the committed sweeps their
//! markers name (a results file changed, the tables were edited by hand, or the report
//! changed). Fix with `hash-bench report --update-doc results/VERDICT.md` (or README.md).

use std::path::Path;

#[test]
fn committed_answer_tables_match_the_committed_results() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for doc in ["results/VERDICT.md", "README.md"] {
        check(&repo.join(doc));
    }
}

fn check(doc_path: &Path) {
    let doc = std::fs::read_to_string(doc_path).unwrap();
    assert!(
        doc.contains(hash_bench::report::ANSWER_BEGIN),
        "{} has no generated answer",
        doc_path.display()
    );
    let fresh = hash_bench::report::update_doc(&doc, doc_path.parent().unwrap()).unwrap();
    if fresh != doc {
        let first = doc
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(doc.lines().count().min(fresh.lines().count()));
        panic!(
            "{} is out of date from line {}: committed {:?}, generated {:?}; \
             run `hash-bench report --update-doc {}`",
            doc_path.display(),
            first + 1,
            doc.lines().nth(first),
            fresh.lines().nth(first),
            doc_path.display()
        );
    }
}
