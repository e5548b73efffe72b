//! Placeholder: the benchmark helper binary is being written.
fn main() {}
