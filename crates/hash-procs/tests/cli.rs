//! The shared conformance tests (see the `testenv` crate), run on `hash-procs`.
testenv::conformance_tests!(env!("CARGO_BIN_EXE_hash-procs"), "hash-procs", true);
