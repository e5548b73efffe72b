//! `hash-async`: a thin binary over `hash-core` with the async strategy.
fn main() -> std::process::ExitCode {
    hash_core::limits::opt_in();
    hash_core::app::main(env!("CARGO_BIN_NAME"), hash_core::Strategy::Async)
}
