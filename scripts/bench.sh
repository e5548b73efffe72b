#!/usr/bin/env bash
# hashrace's benchmark harness: build the four hashers, generate the datasets, check that
# the hashers agree, race them (and installed peers) warm and cold under hyperfine, and
# write one sweep folder per machine and sweep under results/. Run with --help.
#
# This script builds the hash-bench helper (crates/hash-bench) and hands it every
# argument: `hash-bench bench` checks the options (clap: a bad one exits 2 with the
# usage) and conducts the sweep, step by step, each step a hash-bench subcommand.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
case $TARGET in /*) ;; *) TARGET=$REPO/$TARGET ;; esac
LOCKED=()
[[ -f $REPO/Cargo.lock ]] && LOCKED=(--locked)

# Quiet (errors still show): once built, a second run or --help costs a second.
printf '== build (hash-bench)\ncargo build --release %s-p hash-bench\n' "${LOCKED[*]:+${LOCKED[*]} }"
(cd "$REPO" && CARGO_TARGET_DIR=$TARGET cargo build --quiet --release "${LOCKED[@]}" -p hash-bench)
# Paths in the arguments stay relative to where the script was started.
exec "$TARGET/release/hash-bench" bench --repo "$REPO" --target-dir "$TARGET" "$@"
