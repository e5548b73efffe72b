//! The shared conformance tests (see the `testenv` crate), run on `hash-serial`.
testenv::conformance_tests!(env!("CARGO_BIN_EXE_hash-serial"), "hash-serial", false);
