//! `results/VERDICT.md`'s and `results/README.md`'s measured tables are generated: this fails when they no longer
//! match what `hash-bench compare` prints from the committed results files its markers
//! name (a results file changed, or the tables were edited by hand, or the compare output
//! changed). Fix with `hash-bench compare --update-doc results/VERDICT.md` (or README.md).

use std::path::Path;

#[test]
fn committed_verdict_tables_match_the_committed_results() {
    for doc in ["VERDICT.md", "README.md"] {
        check(doc);
    }
}

fn check(name: &str) {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results");
    let doc_path = results.join(name);
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    assert!(
        doc.contains(hash_bench::compare::BEGIN),
        "{} has no generated section",
        doc_path.display()
    );
    let fresh = hash_bench::compare::update_doc(&doc, &results).unwrap();
    if fresh != doc {
        let first = doc
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(doc.lines().count().min(fresh.lines().count()));
        panic!(
            "results/{name} is out of date from line {}: committed {:?}, generated {:?}; \
             run `hash-bench compare --update-doc results/{name}`",
            first + 1,
            doc.lines().nth(first),
            fresh.lines().nth(first)
        );
    }
}
