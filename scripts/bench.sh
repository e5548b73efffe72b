#!/usr/bin/env bash
# hashrace's benchmark harness: build the four hashers, generate the datasets, check that
# the hashers agree, race them (and installed peers) warm and cold under hyperfine, and
# write one sweep folder per machine and sweep under results/. Run with --help.
#
# The careful parts (generation, eviction, residency, peak RSS, the plan, the results
# schema) live in the hash-bench helper (crates/hash-bench); this script only conducts.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# hyperfine version installed by `cargo install` when neither PATH nor apt has one.
HYPERFINE_CRATE_VERSION=1.19.0

usage() {
	cat <<'EOF'
Usage: scripts/bench.sh [--quick | --smoke] [OPTIONS]

Benchmarks the hashrace binaries, one per strategy (release builds), against each
other and against installed peers, on generated datasets, with the data warm (in the
page cache) and cold (evicted right before every timed run), and writes the sweep's
folder results/<host>-<date>-<sweep>/: results.json (self-contained: every timed run is
in it), report.md (the winner of each workload, by how much, and what bounds it; also
printed at the end) and charts/, generated from results.json alone; and raw/, the
hyperfine exports, which stay local (git-ignored).

Sweeps:
  (default)        shards (64 x 8 MiB), small (20,000 x 4 KiB), huge (1 x 2 GiB),
                   mixed (model-like tree, ~1 GiB), empty (an empty directory, warm
                   only). Hashers: 10 warm / 5 cold timed runs (up to 3x more for cheap
                   ones, fewer for runs over ~1.5 s), peers 5 / 3 (1 when a run takes
                   over 4 s), Python 3 / 2 (pure-Python work: warm only). About 32
                   minutes on 2 vCPUs by the plan's estimate (36 with rhash, hashdeep
                   and b3sum installed), plus ~30 s to generate the data the first
                   time (3.6 GiB on disk). The plan step prints its estimate (for
                   verification and benchmarks; not the build or the generation), and
                   --dry-run prints it and times nothing.
  --quick          smaller versions of the four datasets, fewer runs: ~10 minutes by
                   the plan's estimate with sha256sum as the only peer and one Python,
                   ~13 with a second interpreter (--python python3 --python pypy3).
                   Measured on 2 December on a 2-vCPU AMD EPYC guest, with two
                   interpreters and the plan of that day (fewer rows than now): 8.5
                   minutes with sha256sum as the only peer, 13 with every peer.
  --smoke          one ~8 MiB dataset, minimal runs: ~20 s once built on a 2-vCPU
                   AMD EPYC guest (the plan's rough model says ~1m10s); what CI runs.
                   If the data directory cannot be made cold (tmpfs), the smoke sweep
                   runs warm only and says so.

Options:
  --location LIST  where the programs read the data, comma-separated (default: local):
                   local (the data directory), or an sshfs mount of it over an emulated
                   network link: lan (0.2 ms RTT, ~117 MiB/s), wan (20 ms RTT, 100
                   Mbit/s), raw (no shaping). One sweep folder per location
                   (<host>-<date>-<sweep>-<location>/). Cold on a network = a fresh
                   mount before every run; each run's bytes over the link prove it
                   (cold >= 95 % of the data, warm <= 5 %). Needs sshfs,
                   openssh-sftp-server, fuse3 and /dev/fuse; a location that cannot be
                   mounted is reported and skipped, the others still run.
  --memory-limit SIZE
                   run every timed command in a memory cgroup of SIZE (e.g. 256M), so
                   that a dataset larger than SIZE cannot stay in the page cache; "warm"
                   then means what the cgroup kept from the run before (root; cgroup v1
                   or v2 with the memory controller).
  --jobs LIST      job counts to sweep, e.g. 1,2,4 (default: number of CPUs). Passed as
                   -j N to the parallel hashers and as the parallelism of the peers.
  --datasets LIST  race these datasets (names in datasets/ or spec paths) instead.
  --big            add the optional 32 GiB 'big' dataset (larger than memory here; cold
                   only when it does not fit in memory).
  --scale          add the optional scale datasets: 1,000,000 and 2,000,000 empty files
                   (warm only; the hashers alone, at their default -j, 3 runs each;
                   ~1-2 minutes to generate the first time).
  --no-python      leave out the Python reference programs (scripts/pyhash.py).
  --python PATH    race the Python rows under this interpreter instead of python3;
                   repeat it, or give a comma-separated list, for several (e.g.
                   --python python3 --python pypy3). A free-threaded python3.14t or
                   python3.13t on PATH is raced either way; when there is none, the
                   results show its rows as absent and say how to install one.
  --bin-dir DIR    take the four hashers from DIR instead of building them here.
  --data-dir DIR   where datasets are generated (default: datasets/data). Must be on a
                   disk-backed filesystem for cold runs.
  --out DIR        where results go (default: results).
  --peers LIST     auto (default: sha256sum, plus rhash, hashdeep, b3sum if installed),
                   none, or a comma-separated list of those.
  --install-peers  apt-get install rhash, hashdeep and b3sum first (root with apt only).
  --warm-only      skip cold runs.     --cold-only   skip warm runs.
  --evict METHOD   fadvise (default; per file, no root) or drop-caches (root; also drops
                   dentries and inodes, i.e. the directory walk is cold too).
  --fresh          discard an interrupted run of the same plan instead of resuming it.
  --dry-run        do everything up to the plan, then stop: build (cargo build
                   --release), install hyperfine if it is missing (and the peers with
                   --install-peers), probe the data directory with a 4 MiB scratch
                   file (written, evicted, removed) when cold runs are planned locally,
                   write the plan to OUT/tmp/<sweep>-<plan id>/plan.json and print its
                   summary and estimate. Generates, verifies and times nothing; the
                   work directory stays (a later run of the same plan uses it), and
                   with --fresh an interrupted run's work directory is discarded.
  -h, --help       this help.

How it measures:
  * Before timing, every hasher command runs once per dataset; all outputs must be
    byte-identical and hash to the dataset's committed digest, or nothing is timed.
  * hyperfine -N (no shell) times each program on each dataset and cache state. Its
    --prepare runs before every run: 'hash-bench evict --record' for cold (eviction,
    then mincore residency), 'hash-bench residency --top-up --record' for warm (pages
    the kernel dropped since the last run, as DAMON's pageout does on some guests, are
    read back first). A cold run that started more than 5 % resident, or a warm one
    below 95 % (under --memory-limit: above the limit's share of the data plus 5
    points), is kept but flagged invalid in the results and the table.
  * Peak RSS comes from one untimed run right before hyperfine (hash-bench maxrss;
    evicted first when cold), which is also the warm-up run. Locally, a program's
    first warm benchmark of a dataset is preceded by one more untimed run, on the
    dataset evicted: how a file entered the page cache sets its folio sizes, which
    moved warm runs by 5-12 % here (mapped and copied alike), so each program is
    timed warm in the state its own first run left.
  * Peers run through 'sh -c' pipelines (find | sort | xargs -P N ... sha256sum), so
    their times include find and sort; b3sum (BLAKE3) is a speed reference only.
  * Rows raced besides the hashers and peers (see docs/results-schema.md):
    - hash-threads/-procs/-async at each --jobs value AND with no -j at all
      ("-j default"); hash-async-pool and hash-async-uring (default -j): each
      non-default --io mode of a hasher that hash-core gives an --io option.
    - reference rows: ref-sha256-1core / ref-sha256-allcores (hash-bench ceiling
      --limit compute: the dataset's file sizes hashed in memory from one 64 KiB
      buffer that stays in L1/L2, no I/O, on 1 thread and on all CPUs: the compute
      limit; warm only), ref-sha256-stream-1core / ref-sha256-stream-allcores
      (--limit stream: the same sizes hashed end to end through a buffer of up to
      256 MiB, so every byte comes from memory: the streaming limit; the buffer's
      fill is timed; warm only, not under --memory-limit), ref-read-floor -jN
      (hash-bench read-floor: open + read + close, no hashing, N = CPUs and 64;
      warm and cold), and ref-hash-floor-1core / -allcores
      (hash-bench hash-floor: open + fstat + read + close + SHA-256 per file and
      nothing else, on 1 thread and on all CPUs; warm only, local only, on
      datasets whose files are all under 1 MiB).
    - python-serial/-threads/-procs/-asyncio (scripts/pyhash.py) when python3 is
      installed, at each --jobs value and with the pools' own defaults ("-j
      default", chunksize=8 for processes), under each interpreter; checked against
      the hashers' output before timing. The same four with pure-Python work
      (python-*-pysum: the byte sum mod 2^32, which holds the GIL; warm only),
      checked against hash-bench's own byte sums. The results name each
      interpreter's version and whether its GIL is on, and 'hash-bench compare'
      prints the flip table: each work under each interpreter beside the hashers.
  * Peak RSS is recorded twice: the largest single process, and the sum over the
    whole process tree (hash-procs' parent plus workers).

Interrupting (Ctrl-C) is safe: rerun the same command and it resumes where it stopped
(same binaries and settings), reusing generated data. See docs/benchmark.md.
EOF
}

SWEEP=default
JOBS=""
DATASETS=""
BIG=0
SCALE=0
NO_PYTHON=0
PYTHONS=()
BIN_DIR=""
DATA_DIR="$REPO/datasets/data"
OUT="$REPO/results"
PEERS=auto
INSTALL_PEERS=0
WARM=1
COLD=1
EVICT=fadvise
FRESH=0
DRY_RUN=0
LOCATIONS=local
MEMORY_LIMIT=""

die() {
	printf 'bench.sh: %s\n' "$*" >&2
	exit 1
}
say() { printf '%s\n' "$*"; }
step() { printf '\n== %s\n' "$*"; }

need_arg() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
	case $1 in
	--quick) SWEEP=quick ;;
	--smoke) SWEEP=smoke ;;
	--jobs) need_arg "$@"; JOBS=$2; shift ;;
	--location) need_arg "$@"; LOCATIONS=$2; shift ;;
	--memory-limit) need_arg "$@"; MEMORY_LIMIT=$2; shift ;;
	--datasets) need_arg "$@"; DATASETS=$2; shift ;;
	--big) BIG=1 ;;
	--scale) SCALE=1 ;;
	--no-python) NO_PYTHON=1 ;;
	--python) need_arg "$@"; IFS=, read -r -a _p <<<"$2"; PYTHONS+=("${_p[@]}"); shift ;;
	--bin-dir) need_arg "$@"; BIN_DIR=$2; shift ;;
	--data-dir) need_arg "$@"; DATA_DIR=$2; shift ;;
	--out) need_arg "$@"; OUT=$2; shift ;;
	--peers) need_arg "$@"; PEERS=$2; shift ;;
	--install-peers) INSTALL_PEERS=1 ;;
	--warm-only) COLD=0 ;;
	--cold-only) WARM=0 ;;
	--evict) need_arg "$@"; EVICT=$2; shift ;;
	--fresh) FRESH=1 ;;
	--dry-run) DRY_RUN=1 ;;
	-h | --help) usage; exit 0 ;;
	*) printf 'bench.sh: unknown argument %s\n\n' "$1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
[[ $WARM == 1 || $COLD == 1 ]] || die "--warm-only and --cold-only leave nothing to run"
# Paths given relative to where the script was started; it cds to the repo below.
abspath() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
DATA_DIR=$(abspath "$DATA_DIR")
OUT=$(abspath "$OUT")
[[ -z $BIN_DIR ]] || BIN_DIR=$(abspath "$BIN_DIR")
((NO_PYTHON && ${#PYTHONS[@]})) && die "--python and --no-python contradict each other"
# A wrong --python stops here, before a build or a sweep starts (hash-bench plan asks
# each interpreter the details again and records them). A path is made absolute: the
# script runs from the repository.
for i in "${!PYTHONS[@]}"; do
	py=${PYTHONS[$i]}
	[[ -n $py ]] || die "--python needs a path or a command name"
	[[ $py == */* ]] && PYTHONS[$i]=$(abspath "$py")
	"${PYTHONS[$i]}" -c 'import sys; sys.exit(sys.version_info < (3, 9))' </dev/null >/dev/null 2>&1 ||
		die "--python $py: not a working Python 3.9 or later"
done
case $EVICT in fadvise | drop-caches) ;; *) die "--evict must be fadvise or drop-caches" ;; esac
# Checked here, before the build, as hash-bench plan would check them after it.
[[ -z $JOBS || $JOBS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
	die "--jobs $JOBS: expected job counts of 1 or more, comma-separated (e.g. 1,2,4)"
[[ -z $MEMORY_LIMIT || $MEMORY_LIMIT =~ ^[0-9]+(\.[0-9]+)?([kKmMgGtT]([iI]?[bB])?|[bB])?$ ]] ||
	die "--memory-limit $MEMORY_LIMIT: expected a size such as 256M, 1.5G or 512MiB"
IFS=, read -r -a LOCATION_LIST <<<"$LOCATIONS"
for loc in "${LOCATION_LIST[@]}"; do
	case $loc in local | lan | wan | raw) ;; *) die "unknown location '$loc' (local, lan, wan or raw)" ;; esac
done

is_root() { [[ $(id -u) == 0 ]]; }
have() { command -v "$1" >/dev/null 2>&1; }

# drop_caches is written before every cold run, and with it every warm benchmark's own
# cold run: say now, not minutes into the sweep, that this user cannot write it.
if [[ $EVICT == drop-caches && $DRY_RUN == 0 && ! -w /proc/sys/vm/drop_caches ]]; then
	die "--evict drop-caches: /proc/sys/vm/drop_caches is not writable here (needs root); use --evict fadvise"
fi

apt_install() {
	# Try with the current package lists first; refresh them only if that fails.
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; }
}

hyperfine_ok() {
	# -N (no intermediate shell) appeared in hyperfine 1.13.
	local v major minor
	v=$(hyperfine --version 2>/dev/null | awk '{print $2}') || return 1
	IFS=. read -r major minor _ <<<"$v"
	[[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] || return 1
	((major > 1 || (major == 1 && minor >= 13)))
}

ensure_hyperfine() {
	if have hyperfine && hyperfine_ok; then
		return
	fi
	if have hyperfine; then
		say "hyperfine $(hyperfine --version) is older than 1.13 (no -N); installing a newer one"
	else
		say "hyperfine is not on PATH; installing it"
	fi
	if is_root && have apt-get; then
		say "  apt-get install hyperfine"
		apt_install hyperfine || say "  apt-get could not install hyperfine"
	fi
	if ! { have hyperfine && hyperfine_ok; }; then
		say "  cargo install --locked hyperfine --version $HYPERFINE_CRATE_VERSION (takes a few minutes)"
		cargo install --quiet --locked hyperfine --version "$HYPERFINE_CRATE_VERSION"
		PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
	fi
	{ have hyperfine && hyperfine_ok; } || die "could not install a usable hyperfine (>= 1.13)"
	say "  using $(hyperfine --version) at $(command -v hyperfine)"
}

install_peers() {
	if is_root && have apt-get; then
		say "installing peers: apt-get install rhash hashdeep b3sum"
		apt_install rhash hashdeep b3sum || say "  some peers could not be installed; racing those present"
	else
		say "--install-peers: needs root and apt-get; racing the peers already installed"
	fi
}

WORK=""
T0=$(date +%s)
on_exit() {
	local rc=$?
	# A network location's mount runs in a session of its own: stop it (no-op if none).
	if [[ -n $WORK && -d $WORK/net && -n ${HB:-} ]]; then
		"$HB" net-stop --work "$WORK" || true
	fi
	if [[ -n $WORK && -d $WORK/raw ]]; then
		rm -f "$WORK"/raw/*.part
		if ((rc != 0)); then
			printf '\nbench.sh: stopped (exit %d). Rerun the same command to resume from %s\n' "$rc" "$WORK" >&2
		fi
	fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cd "$REPO"
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
case $TARGET in /*) ;; *) TARGET=$REPO/$TARGET ;; esac
LOCKED=()
[[ -f Cargo.lock ]] && LOCKED=(--locked)

step "build"
if [[ -z $BIN_DIR ]]; then
	# hash-bench first: it knows the hashers (one per hash-core strategy). Then one
	# cargo call per hasher, so that each links only the hash-core features it asks
	# for (hash-async alone takes tokio and io_uring): built together, cargo would
	# give them all one hash-core.
	say "cargo build --release ${LOCKED[*]} -p hash-bench, then -p each hasher"
	cargo build --release "${LOCKED[@]}" -p hash-bench
	for h in $("$TARGET/release/hash-bench" strategies); do
		cargo build --release "${LOCKED[@]}" -p "$h"
	done
	BIN_DIR=$TARGET/release
else
	say "hashers from $BIN_DIR; cargo build --release -p hash-bench ${LOCKED[*]}"
	cargo build --release -p hash-bench "${LOCKED[@]}"
fi
HB=$TARGET/release/hash-bench
[[ -x $HB ]] || die "$HB was not built"
# One binary per hash-core strategy; hash-bench knows the list.
HASHERS=$("$HB" strategies)
for h in $HASHERS; do
	[[ -x $BIN_DIR/$h ]] || die "$BIN_DIR/$h is missing"
done

step "tools"
ensure_hyperfine
((INSTALL_PEERS)) && install_peers
mkdir -p "$DATA_DIR" "$OUT/tmp"

if ((COLD)) && [[ ,$LOCATIONS, == *,local,* ]]; then
	if ! "$HB" fs-check --probe "$DATA_DIR" >/dev/null; then
		if [[ $SWEEP == smoke ]]; then
			say "cold runs are impossible in $DATA_DIR (see above); the smoke sweep runs warm only"
			COLD=0
			WARM=1
		else
			die "cold runs need a disk-backed data directory: use --data-dir DIR or --warm-only"
		fi
	fi
fi

# One sweep per location: plan, data, verification, race, results. A location that
# fails (no FUSE, a busy mount point) is reported; the others still run.
sweep_location() {
	local loc=$1
	step "plan ($loc)"
	local args=("${PLAN_ARGS[@]}" --location "$loc")
	[[ -n $MEMORY_LIMIT ]] && args+=(--memory-limit "$MEMORY_LIMIT")
	if [[ $loc != local ]]; then
		"$HB" net-check || return 1
	fi
	# stdout: the work directory; every later step reads the plan (plan.json) from there.
	WORK=$("$HB" plan "${args[@]}") || return 1
	if ((DRY_RUN)); then
		say "dry run: plan in $WORK/plan.json; nothing run"
		WORK=""
		return 0
	fi

	step "datasets (generated once, then reused)"
	"$HB" gen --work "$WORK" || return 1

	step "verify ($loc): every hasher must print the same, expected output"
	"$HB" verify --work "$WORK" || return 1

	step "race ($loc)"
	# Per benchmark: warm check, the untimed peak-RSS run, hyperfine; finished ones are skipped.
	"$HB" race --work "$WORK" || return 1

	step "results ($loc)"
	# Results file, table, validation and charts (beside the results, in its raw directory).
	"$HB" collect --work "$WORK" --out "$OUT" --hyperfine "$(command -v hyperfine)" --validate --charts || return 1
	WORK=""
}

PLAN_ARGS=(--sweep "$SWEEP" --specs-dir "$REPO/datasets" --data-root "$DATA_DIR"
	--bin-dir "$BIN_DIR" --hash-bench "$HB" --peers "$PEERS" --eviction "$EVICT"
	--repo "$REPO" --work-parent "$OUT/tmp")
[[ -n $JOBS ]] && PLAN_ARGS+=(--jobs "$JOBS")
[[ -n $DATASETS ]] && PLAN_ARGS+=(--datasets "$DATASETS")
EXTRA=()
((BIG)) && EXTRA+=(big)
((SCALE)) && EXTRA+=(scale scale2)
((${#EXTRA[@]})) && PLAN_ARGS+=(--extra-datasets "$(IFS=,; echo "${EXTRA[*]}")")
((NO_PYTHON)) && PLAN_ARGS+=(--no-python)
for py in "${PYTHONS[@]}"; do PLAN_ARGS+=(--python "$py"); done
((WARM)) || PLAN_ARGS+=(--no-warm)
((COLD)) || PLAN_ARGS+=(--no-cold)
((FRESH)) && PLAN_ARGS+=(--fresh)
FAILED=()
for loc in "${LOCATION_LIST[@]}"; do
	if ! sweep_location "$loc"; then
		printf 'bench.sh: the %s sweep failed (see above)\n' "$loc" >&2
		if [[ -n $WORK ]]; then
			"$HB" net-stop --work "$WORK" 2>/dev/null || true
			printf 'bench.sh: rerun the same command to resume it from %s\n' "$WORK" >&2
		fi
		WORK=""
		FAILED+=("$loc")
	fi
done
say "done in $("$HB" since "$T0")"
if ((${#FAILED[@]} == ${#LOCATION_LIST[@]})); then
	die "failed: ${FAILED[*]}"
elif ((${#FAILED[@]})); then
	die "failed: ${FAILED[*]} (the other locations' results are written)"
fi
