//! The shared conformance tests (see the `testenv` crate), run on `hash-threads`.
testenv::conformance_tests!(env!("CARGO_BIN_EXE_hash-threads"), "hash-threads", true);
