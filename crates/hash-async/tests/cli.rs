//! The shared conformance tests (see the `testenv` crate), run on `hash-async`.
testenv::conformance_tests!(env!("CARGO_BIN_EXE_hash-async"), "hash-async", true);
