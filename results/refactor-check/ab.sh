#!/bin/bash
# Interleaved A/B: before (a9335bb) vs after (HEAD) binaries, same data, blocks alternate order.
# Usage: ab.sh BIN:DATASET:CACHE... (run from anywhere; A = /work/before = a9335bb, B = /work/main = HEAD release builds, data in /work/qdata from --quick)
set -eu
A=/work/before/target/release; B=/work/main/target/release; HB=$B/hash-bench
cd /work/qdata
ROUNDS=${ROUNDS:-6}
for case in "$@"; do  # case = bin:dataset:cache
  IFS=: read -r bin ds cache <<<"$case"
  for r in $(seq 1 $ROUNDS); do
    if ((r % 2)); then first=$A; second=$B; else first=$B; second=$A; fi
    if [[ $cache == cold ]]; then prep=(--prepare "$HB evict $ds"); warm=(); else prep=(); warm=(--warmup 2); fi
    hyperfine -N --style none -r 5 "${warm[@]}" "${prep[@]}" --export-json "$(dirname "$0")"/ab/$bin.$ds.$cache.$r.json \
      "$first/$bin $ds" "$second/$bin $ds" >/dev/null 2>&1
  done
done
