//! The recipe for a fifth strategy (docs/architecture.md, "Adding a fifth
//! strategy") held against the code: one module in hash-core, one entry in
//! `Strategy::ALL`, one binary crate. Everything else must derive its list of
//! strategies from `Strategy::ALL`, so no source outside hash-core's strategy
//! modules may spell out three or more of the binaries' names in one line;
//! and every binary crate must be the one the recipe describes.

use std::path::{Path, PathBuf};

use hash_core::Strategy;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file below `dir` whose name ends in one of `exts`.
fn sources(dir: &Path, exts: &[&str], found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, exts, found);
        } else if exts
            .iter()
            .any(|e| path.extension().is_some_and(|x| x == *e))
        {
            found.push(path);
        }
    }
}

#[test]
fn each_strategy_is_one_binary_crate_as_the_recipe_says() {
    let recipe = read(&repo().join("docs/architecture.md"));
    assert!(
        recipe.contains("### Adding a fifth strategy"),
        "the recipe moved"
    );
    for s in Strategy::ALL {
        let krate = repo().join("crates").join(s.binary());
        let variant = format!("hash_core::Strategy::{s:?}");
        let main = read(&krate.join("src/main.rs"));
        assert!(
            main.contains(&variant),
            "{} does not run {variant}",
            s.binary()
        );
        assert!(
            main.contains("hash_core::limits::opt_in()"),
            "{}",
            s.binary()
        );
        assert!(
            main.lines().count() <= 6,
            "{}'s main is more than the recipe's",
            s.binary()
        );
        let cli = read(&krate.join("tests/cli.rs"));
        assert!(cli.contains("check_built_binary("), "{}", s.binary());
        let manifest = read(&krate.join("Cargo.toml"));
        assert!(manifest.contains(&format!("name = \"{}\"", s.binary())));
    }
    // And no binary crate runs a strategy that is not in the list.
    for entry in std::fs::read_dir(repo().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let main = dir.join("src/main.rs");
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        if main.exists() && read(&main).contains("hash_core::app::main(") {
            assert!(
                Strategy::ALL.iter().any(|s| s.binary() == name),
                "{name} runs a strategy missing from Strategy::ALL"
            );
        }
    }
}

#[test]
fn no_list_of_the_binaries_is_written_out_by_hand() {
    let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.binary()).collect();
    let mut files = Vec::new();
    sources(&repo().join("crates"), &["rs"], &mut files);
    sources(&repo().join("scripts"), &["sh", "py"], &mut files);
    let strategy_modules = repo().join("crates/hash-core/src/strategy");
    let mut lists = Vec::new();
    for file in files {
        // Where each strategy is defined, and the verdict's predictions (made,
        // on purpose, about the strategies there were when they were made).
        if file.starts_with(&strategy_modules) || file.ends_with("hash-bench/src/predict.rs") {
            continue;
        }
        let text = read(&file);
        // Tests may name the binaries they test.
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") || trimmed.starts_with('#') {
                continue;
            }
            let named = names
                .iter()
                .filter(|b| {
                    line.match_indices(**b).any(|(i, _)| {
                        // A whole name (`hash-async`, not `hash-async-pool`).
                        let after = line[i + b.len()..].chars().next();
                        !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
                    })
                })
                .count();
            if named >= 3 {
                lists.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        lists.is_empty(),
        "derive these from Strategy::ALL:\n{}",
        lists.join("\n")
    );
}
