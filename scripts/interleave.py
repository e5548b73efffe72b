#!/usr/bin/env python3
"""Time commands on one directory in turn, round after round: an A/B of two builds or
of a hasher against its floor, where hyperfine's runs of one command back to back would
let the host's drift (this project's 2-vCPU guests change speed from one minute to the
next) fall on one command more than on another.

Usage: scripts/interleave.py [--cold] [--rounds N] DIR COMMAND...

Each COMMAND is split on spaces and run with DIR appended, stdout discarded; a command
that fails stops the script. Each round runs every command once, the order reversed
every other round. Warm (the default): three untimed runs of each command first. With
--cold: `hash-bench evict DIR` (target/release/hash-bench, or HASH_BENCH) before every
run. Prints per command the median and the minimum wall time, the mean user and system
CPU time of a run, and the first command's median divided by this one's.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", action="store_true", help="evict DIR before every run")
    ap.add_argument("--rounds", type=int, default=40, help="rounds (default 40)")
    ap.add_argument("dir")
    ap.add_argument("commands", nargs="+")
    a = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    evict = os.environ.get("HASH_BENCH", os.path.join(repo, "target/release/hash-bench"))

    def once(cmd: str) -> tuple[float, float, float]:
        if a.cold:
            subprocess.run([evict, "evict", a.dir], stdout=subprocess.DEVNULL, check=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd.split() + [a.dir], stdout=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime

    if not a.cold:
        for cmd in a.commands:
            for _ in range(3):
                once(cmd)
    runs: dict[str, list[tuple[float, float, float]]] = {c: [] for c in a.commands}
    for r in range(a.rounds):
        for cmd in a.commands if r % 2 == 0 else a.commands[::-1]:
            runs[cmd].append(once(cmd))
    first = statistics.median(w for w, _, _ in runs[a.commands[0]])
    for cmd in a.commands:
        walls = [w for w, _, _ in runs[cmd]]
        median = statistics.median(walls)
        user = statistics.mean(u for _, u, _ in runs[cmd])
        system = statistics.mean(s for _, _, s in runs[cmd])
        print(
            f"{cmd}: median {median * 1e3:.1f} ms, min {min(walls) * 1e3:.1f} ms, "
            f"user {user * 1e3:.1f} ms, system {system * 1e3:.1f} ms, "
            f"first/this {first / median:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
