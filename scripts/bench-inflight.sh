#!/usr/bin/env bash
# Race the in-flight policy against fixed depths: each parallel hasher at its default
# (the policy) and with --max-in-flight N for N in 1, 2, 4, ..., 128, plus hash-serial,
# cold, on one dataset, on the local disk or over the emulated network link. Writes a
# Markdown table and an SVG chart of throughput against depth with the policy's choice
# marked, beside hyperfine's results (results/tmp/inflight-HOST-DATE-LOCATION.{md,svg}, git-ignored, and .hyperfine: its JSON export).
#
#   scripts/bench-inflight.sh [--location local|lan|wan] [--dataset NAME] [--runs N]
#                             [--depths 1,2,4,...]
#
# --runs N runs N rounds; each round runs every command once (one hyperfine call per
# round), and a row's figure is the median over the rounds.
#
# Cold means: local, the dataset's pages evicted (hash-bench evict) before every run;
# lan/wan, the dataset served by `hash-bench mount` (sshfs through the link emulator)
# and every page cache dropped (echo 3 > /proc/sys/vm/drop_caches, root) before every
# run, so each run's data crosses the link. The policy's choice is what `--stats` prints
# ("in flight: ...") on one more cold run of each default. Needs a release build,
# hyperfine, and for lan/wan sshfs, sftp-server and root.
set -euo pipefail

location=local
dataset=small-quick
runs=3
depths=1,2,4,8,16,32,64,128
while [ $# -gt 0 ]; do
    case $1 in
        --location) location=$2; shift 2 ;;
        --dataset) dataset=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --depths) depths=$2; shift 2 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "bench-inflight: unknown option $1" >&2; exit 2 ;;
    esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${CARGO_TARGET_DIR:-$repo/target}/release
hb=$bin/hash-bench
data=$repo/datasets/data
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=$repo/results/tmp/inflight-$(hostname)-$stamp-$location
mkdir -p "$repo/results/tmp"
tmp=$(mktemp -d)
mnt=
daemon=
cleanup() {
    if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
    if [ -n "$mnt" ]; then fusermount3 -u "$mnt" 2>/dev/null || fusermount -u "$mnt" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

"$hb" gen --quiet --root "$data" "$repo/datasets/$dataset.json"
if [ "$location" = local ]; then
    dir=$data/$dataset
    prepare="$hb evict $dir"
else
    mnt=$tmp/mnt
    mkdir -p "$mnt"
    "$hb" mount --profile "$location" "$data/$dataset" "$mnt" 2>"$tmp/mount.log" &
    daemon=$!
    for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
    mountpoint -q "$mnt" || { cat "$tmp/mount.log" >&2; exit 1; }
    dir=$mnt
    prepare="sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'"
fi

IFS=, read -r -a ds <<<"$depths"
mapfile -t parallel < <("$hb" strategies --parallel)
cmds=("$bin/hash-serial $dir")
for b in "${parallel[@]}"; do
    cmds+=("$bin/$b $dir")
    for d in "${ds[@]}"; do cmds+=("$bin/$b --max-in-flight $d $dir"); done
done
# Rounds, not rows: each round runs every command once, so a host that slows down for a few
# minutes (shared cores, a busy link emulator) slows every row alike rather than the few rows
# that ran then. Every other round runs the list backwards, so no command always follows
# the same one.
for r in $(seq "$runs"); do
    order=("${cmds[@]}")
    if [ $((r % 2)) = 0 ]; then
        order=()
        for ((i = ${#cmds[@]} - 1; i >= 0; i--)); do order+=("${cmds[i]}"); done
    fi
    echo "bench-inflight: round $r of $runs" >&2
    hyperfine -N --style basic --prepare "$prepare" --runs 1 \
        --export-json "$tmp/round$r.json" "${order[@]}" >&2
done
python3 - "$tmp/h.json" $(seq -f "$tmp/round%g.json" "$runs") <<'PY'
# One hyperfine-shaped export: each command's times from every round, in round order.
import json, statistics, sys
merged = {}
for f in sys.argv[2:]:
    for r in json.load(open(f))["results"]:
        m = merged.setdefault(r["command"], {"command": r["command"], "times": [], "user": [],
                                             "system": [], "exit_codes": []})
        m["times"] += r["times"]
        m["user"].append(r["user"])
        m["system"].append(r["system"])
        m["exit_codes"] += r["exit_codes"]
out = []
for m in merged.values():
    t = m["times"]
    out.append({"command": m["command"], "mean": statistics.mean(t),
                "stddev": statistics.stdev(t) if len(t) > 1 else None,
                "median": statistics.median(t), "user": statistics.mean(m["user"]),
                "system": statistics.mean(m["system"]), "min": min(t), "max": max(t),
                "times": t, "exit_codes": m["exit_codes"]})
json.dump({"results": out}, open(sys.argv[1], "w"), indent=2)
PY

# The policy's choice, from one more cold run of each default.
for b in "${parallel[@]}"; do
    sh -c "$prepare"
    "$bin/$b" --stats "$dir" 2>&1 >/dev/null | sed -n "s/^$b: in flight: /$b\t/p" >>"$tmp/choice.tsv"
done

files=$(find "$dir" -type f | wc -l)
bytes=$(find "$dir" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
cpu=$(lscpu | sed -n 's/^Model name: *//p')
# hyperfine's own results, kept beside the table and chart they were drawn from.
cp "$tmp/h.json" "$out.hyperfine"
python3 - "$tmp/h.json" "$tmp/choice.tsv" "$out" "$bin/" "$dir" "$location" "$dataset" \
    "$files" "$cpu" "$stamp" "$bytes" "${parallel[@]}" <<'PY'
import json, re, statistics, sys
hj, choice_tsv, out, bindir, d, location, dataset, files, cpu, stamp, size = sys.argv[1:12]
files = int(files)
# Files of a MiB and more are paced by bytes, not by files: rates in MiB/s then.
big = int(size) >= files * (1 << 20)
unit = "MiB/s" if big else "files/s"
per = int(size) / (1 << 20) if big else files
fmt = "{:,.1f}" if big else "{:,.0f}"
res = {}
for r in json.load(open(hj))["results"]:
    cmd = r["command"].replace(bindir, "").replace(" " + d, "")
    res[cmd] = statistics.median(r["times"])
    rounds = len(r["times"])
choices = dict(l.rstrip("\n").split("\t", 1) for l in open(choice_tsv) if "\t" in l)
bins = sys.argv[12:]
depths = sorted({int(m.group(1)) for c in res for m in [re.search(r"--max-in-flight (\d+)", c)] if m})
serial = res["hash-serial"]
md = [f"# In flight against fixed depths: {dataset}, {location}, cold",
      "",
      f"{cpu}; {stamp}; {files} files; median of {rounds} rounds (each runs every row once), {unit} (and × `hash-serial`, "
      f"{fmt.format(per / serial)} {unit} in {serial:.3f} s).",
      "",
      "| `--max-in-flight` | " + " | ".join(f"`{b}`" for b in bins) + " |",
      "|---|" + "---|" * len(bins)]
for dep in depths:
    cells = [f"{fmt.format(per / res[f'{b} --max-in-flight {dep}'])} ({serial / res[f'{b} --max-in-flight {dep}']:.1f}×)" for b in bins]
    md.append(f"| {dep} | " + " | ".join(cells) + " |")
best = {b: min(res[f"{b} --max-in-flight {dep}"] for dep in depths) for b in bins}
md.append("| **default (the policy)** | " + " | ".join(
    f"**{fmt.format(per / res[b])}** ({serial / res[b]:.1f}×; {best[b] / res[b]:.2f} of the best fixed depth)" for b in bins) + " |")
md += ["", "What each default settled on (`--stats`, one more cold run):", ""]
md += [f"- `{b}`: in flight: {choices.get(b, '?')}" for b in bins]
open(out + ".md", "w").write("\n".join(md) + "\n")

# The chart: files/s (or MiB/s) against depth (log2), one line per binary, the default as a
# horizontal dashed line of the same colour, labelled with its settled depth.
W, H, L, R, T, B = 720, 420, 70, 230, 40, 50
ymax = max(per / t for t in res.values()) * 1.1
x = lambda dep: L + (W - L - R) * (depths.index(dep) / max(1, len(depths) - 1))
y = lambda v: T + (H - T - B) * (1 - v / ymax)
colours = dict(zip(bins, ["#1f77b4", "#d62728", "#2ca02c"]))
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{L}" y="18" font-size="14">{dataset}, {location}, cold: {unit} against --max-in-flight</text>',
       f'<text x="{L}" y="34" font-size="11">{cpu}, {stamp}</text>',
       f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
       f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
for dep in depths:
    svg.append(f'<text x="{x(dep):.0f}" y="{H - B + 16}" text-anchor="middle">{dep}</text>')
svg.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 12}" text-anchor="middle">requests in flight (fixed)</text>')
for k in range(5):
    v = ymax * k / 4
    svg.append(f'<text x="{L - 6}" y="{y(v) + 4:.0f}" text-anchor="end">{fmt.format(v)}</text>')
for i, b in enumerate(bins):
    pts = " ".join(f"{x(dep):.1f},{y(per / res[f'{b} --max-in-flight {dep}']):.1f}" for dep in depths)
    c = colours[b]
    svg.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{pts}"/>')
    yd = y(per / res[b])
    svg.append(f'<line x1="{L}" y1="{yd:.1f}" x2="{W - R}" y2="{yd:.1f}" stroke="{c}" stroke-dasharray="6,4"/>')
    # Where it ended, in a few words, from its --stats line.
    said = choices.get(b, "")
    settled = next((fmt.format(m.group(1)) for pat, fmt in [
        (r"(\d+) at most$", "{} at most"),          # procs on a local disk
        (r"settled at (\d+)", "settled at {}"),     # the measured policy
        (r"^(\d+) reading, more", "{}+ readers"),   # readers join while files wait
        (r"^(\d+)", "{} in flight")] for m in [re.search(pat, said)] if m), None)
    label = f"{b} default: {fmt.format(per / res[b])} {unit}" + (f" ({settled})" if settled else "")
    svg.append(f'<text x="{W - R + 8}" y="{T + 20 + 36 * i}" fill="{c}">{b}</text>')
    svg.append(f'<text x="{W - R + 8}" y="{T + 36 + 36 * i}" fill="{c}" font-size="11">{label[len(b) + 1:]}</text>')
svg.append(f'<text x="{W - R + 8}" y="{T + 20 + 36 * len(bins)}" font-size="11">solid: fixed depth</text>')
svg.append(f'<text x="{W - R + 8}" y="{T + 36 + 36 * len(bins)}" font-size="11">dashed: the default</text>')
svg.append("</svg>")
open(out + ".svg", "w").write("\n".join(svg) + "\n")
print(open(out + ".md").read())
PY
echo "bench-inflight: wrote $out.md and $out.svg" >&2
