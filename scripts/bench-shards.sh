#!/usr/bin/env bash
# The sharded path, measured on one machine: the same dataset hashed by one hash-threads run,
# and split in N shards run side by side and merged. Reports the sharding overhead (N shards
# at once vs one run) and the merge's cost. Run with --help; see docs/scale-out.md.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
	cat <<'EOF'
Usage: scripts/bench-shards.sh [OPTIONS]

Times, with hyperfine (warm page cache unless --cold):
  single        hash-threads -j J --tree DATASET                       (the baseline)
  list          hash-threads --list DATASET                            (the one walk)
  shards-list   N x hash-threads -j S --shard K/N --tree --files-from LIST, all at once
  shards-walk   N x hash-threads -j S --shard K/N --tree DATASET, all at once (each walks)
  merge         hash-threads --merge --tree SHARD...
Before timing, the merged output must equal the single run byte for byte.

Options:
  --dataset NAME   a spec in datasets/ (default: shards); generated with hash-bench gen
  --shards N       number of shards (default: 4)
  --jobs J         workers of the single run (default: CPUs)
  --shard-jobs S   workers of each shard (default: max(1, J / N))
  --runs R         timed runs per command (default: 10)
  --cold           evict the dataset before every run (hash-bench evict; the list stays warm)
  --data-dir DIR   where datasets are generated (default: datasets/data)
  --out DIR        where the hyperfine exports go (default: results/shards-<host>-<date>)
  --bin-dir DIR    take hash-threads and hash-bench from DIR instead of building them
  --smoke          the smoke dataset, 2 runs: a functional check, not a measurement
  -h, --help       this help

Sharding overhead = mean(shards-list) / mean(single) - 1: what splitting costs when the
shards share one machine (N processes, N plans, the list read N times). Merge cost =
mean(merge), also as a fraction of mean(single). On a cluster each shard has a node to
itself and shares nothing, so N nodes take about mean(list) + mean(single) / N +
mean(merge) (shards are balanced by bytes); docs/scale-out.md shows how to run them.
EOF
}

DATASET=shards
SHARDS=4
JOBS=$(nproc)
SHARD_JOBS=""
RUNS=10
COLD=0
DATA_DIR="$REPO/datasets/data"
OUT=""
BIN_DIR=""

die() {
	printf 'bench-shards.sh: %s\n' "$*" >&2
	exit 1
}
need_arg() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"; }
abspath() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }

while [[ $# -gt 0 ]]; do
	case $1 in
	--dataset) need_arg "$@"; DATASET=$2; shift ;;
	--shards) need_arg "$@"; SHARDS=$2; shift ;;
	--jobs) need_arg "$@"; JOBS=$2; shift ;;
	--shard-jobs) need_arg "$@"; SHARD_JOBS=$2; shift ;;
	--runs) need_arg "$@"; RUNS=$2; shift ;;
	--cold) COLD=1 ;;
	--data-dir) need_arg "$@"; DATA_DIR=$(abspath "$2"); shift ;;
	--out) need_arg "$@"; OUT=$(abspath "$2"); shift ;;
	--bin-dir) need_arg "$@"; BIN_DIR=$(abspath "$2"); shift ;;
	--smoke) DATASET=smoke; RUNS=2 ;;
	-h | --help) usage; exit 0 ;;
	*) printf 'bench-shards.sh: unknown argument %s\n\n' "$1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
[[ $SHARDS =~ ^[1-9][0-9]*$ ]] || die "--shards must be a positive number"
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive number"
[[ -n $SHARD_JOBS ]] || SHARD_JOBS=$((JOBS / SHARDS > 0 ? JOBS / SHARDS : 1))
command -v hyperfine >/dev/null || die "hyperfine is not on PATH (scripts/bench.sh installs it, or: apt-get install hyperfine)"
command -v jq >/dev/null || die "jq is not on PATH (apt-get install jq)"

cd "$REPO"
if [[ -z $BIN_DIR ]]; then
	cargo build --release --locked --quiet -p hash-threads -p hash-bench
	BIN_DIR=$REPO/target/release
fi
HT=$BIN_DIR/hash-threads
HB=$BIN_DIR/hash-bench
[[ -x $HT && -x $HB ]] || die "no hash-threads/hash-bench in $BIN_DIR"

"$HB" gen --quiet --root "$DATA_DIR" --specs-dir "$REPO/datasets" "$DATASET"
ROOT=$DATA_DIR/$DATASET
[[ -d $ROOT ]] || die "dataset $DATASET was not generated in $DATA_DIR"
[[ -n $OUT ]] || OUT=$REPO/results/tmp/shards-$(hostname -s)-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The commands, as shell lines (the shard runs need '&' and 'wait').
LIST=$WORK/list
SHARD_OUT=$WORK/shards
mkdir -p "$SHARD_OUT"
shards_cmd() { # $1: source arguments
	local k cmd=""
	for ((k = 0; k < SHARDS; k++)); do
		cmd+="'$HT' -j $SHARD_JOBS --shard $k/$SHARDS --tree $1 > '$SHARD_OUT/$k' & "
	done
	printf '%s wait' "$cmd"
}
SINGLE="'$HT' -j $JOBS --tree '$ROOT' > '$WORK/single'"
LISTING="'$HT' --list '$ROOT' > '$LIST'"
SHARDS_LIST=$(shards_cmd "--files-from '$LIST'")
SHARDS_WALK=$(shards_cmd "'$ROOT'")
MERGE="'$HT' --merge --tree $(for ((k = 0; k < SHARDS; k++)); do printf "'%s' " "$SHARD_OUT/$k"; done)> '$WORK/merged'"

echo "== check: merged shards equal the single run ($DATASET, $SHARDS shards)"
for c in "$SINGLE" "$LISTING" "$SHARDS_LIST" "$MERGE"; do sh -c "$c"; done
cmp "$WORK/single" "$WORK/merged" || die "the merge differs from the single run"
sh -c "$SHARDS_WALK" && sh -c "$MERGE"
cmp "$WORK/single" "$WORK/merged" || die "the merge of walking shards differs from the single run"
echo "   ok: $(grep -vc '^#' "$WORK/single") files, $(tail -n 1 "$WORK/single")"

PREPARE=()
if ((COLD)); then
	PREPARE=(--prepare "'$HB' evict '$ROOT'")
fi
echo "== hyperfine ($RUNS runs each, $([[ $COLD == 1 ]] && echo cold || echo warm))"
# The merge's inputs must exist before it is timed: shards-list runs before merge.
hyperfine --runs "$RUNS" --warmup 1 --shell sh "${PREPARE[@]}" \
	--export-json "$OUT/bench-shards.json" --export-markdown "$OUT/bench-shards.md" \
	-n single "$SINGLE" -n list "$LISTING" -n shards-list "$SHARDS_LIST" \
	-n shards-walk "$SHARDS_WALK" -n merge "$MERGE"

mean() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .mean' "$OUT/bench-shards.json"; }
jq -n --argjson single "$(mean single)" --argjson list "$(mean list)" \
	--argjson sl "$(mean shards-list)" --argjson sw "$(mean shards-walk)" \
	--argjson merge "$(mean merge)" --arg ds "$DATASET" --argjson n "$SHARDS" \
	--argjson j "$JOBS" --argjson s "$SHARD_JOBS" --argjson files "$(grep -vc '^#' "$WORK/single")" \
	--argjson bytes "$(du -sb --apparent-size "$ROOT" | cut -f1)" '{
	  dataset: $ds, files: $files, bytes: $bytes, shards: $n, single_jobs: $j, shard_jobs: $s,
	  mean_seconds: {single: $single, list: $list, shards_list: $sl, shards_walk: $sw, merge: $merge},
	  sharding_overhead: ($sl / $single - 1),
	  sharding_overhead_with_walks: ($sw / $single - 1),
	  merge_fraction_of_single: ($merge / $single),
	  merge_seconds_per_file: ($merge / $files)
	}' | tee "$OUT/summary.json"
echo "== results in $OUT"
