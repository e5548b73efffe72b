//! `hash-async` as built by this crate. What every binary must do is tested on
//! all of them at once in `crates/testenv/tests/conformance.rs`; this checks
//! that those tests find this build and that it runs the async strategy. (An
//! integration test is also what has `cargo test` build the binary at all.)

#[test]
fn is_the_binary_the_conformance_tests_run_and_runs_its_strategy() {
    testenv::check_built_binary(hash_core::Strategy::Async, env!("CARGO_BIN_EXE_hash-async"));
}
