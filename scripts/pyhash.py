#!/usr/bin/env python3
"""pyhash: the classic Python version of hashrace's experiment, as a reference.

Hashes every regular file under the given directories with SHA-256 and prints
`sha256sum`-format lines sorted by path bytes, with one of four strategies:

  serial    one loop
  threads   concurrent.futures.ThreadPoolExecutor (hashlib releases the GIL)
  procs     concurrent.futures.ProcessPoolExecutor (pays start-up and pickling)
  asyncio   asyncio.to_thread on a thread pool of -j workers

Standard library only. Files are read in 1 MiB chunks. The output is byte-identical
to `find -H DIR -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum` (GNU name
escaping), so the benchmark harness checks it like the hashrace binaries before
timing it. Errors are `pyhash: PATH: reason` on stderr; the run continues and exits 1.

Usage: pyhash.py {serial,threads,procs,asyncio} [-j N] DIR...
"""

import argparse
import asyncio
import concurrent.futures
import hashlib
import os
import stat
import sys

CHUNK = 1 << 20


def walk(root):
    """Regular files under root (bytes paths), not following links below it."""
    try:
        st = os.stat(root)  # like find -H: the argument itself is followed
    except OSError as e:
        yield ("error", root, e)
        return
    if stat.S_ISREG(st.st_mode):
        yield ("file", root, None)
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError as e:
            yield ("error", d, e)
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    yield ("file", e.path, None)
            except OSError as err:
                yield ("error", e.path, err)


def hash_file(path):
    """(path, hex digest or None, error text or None)."""
    try:
        h = hashlib.sha256()
        with open(path, "rb", buffering=0) as f:
            while True:
                b = f.read(CHUNK)
                if not b:
                    break
                h.update(b)
        return (path, h.hexdigest(), None)
    except OSError as e:
        return (path, None, e.strerror or str(e))


def escape(path):
    """GNU sha256sum escaping: (needs a leading backslash, escaped name)."""
    if b"\\" not in path and b"\n" not in path and b"\r" not in path:
        return False, path
    return True, path.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")


def run_serial(paths, jobs):
    return [hash_file(p) for p in paths]


def run_threads(paths, jobs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(hash_file, paths))


def run_procs(paths, jobs):
    # Batches keep pickling and messaging per file small, as any fair use would.
    chunk = max(1, len(paths) // (jobs * 16))
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(hash_file, paths, chunksize=chunk))


def run_asyncio(paths, jobs):
    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=jobs))
        return await asyncio.gather(*(asyncio.to_thread(hash_file, p) for p in paths))

    return asyncio.run(main())


STRATEGIES = {
    "serial": run_serial,
    "threads": run_threads,
    "procs": run_procs,
    "asyncio": run_asyncio,
}


def main():
    ap = argparse.ArgumentParser(prog="pyhash", description=__doc__.split("\n")[0])
    ap.add_argument("strategy", choices=sorted(STRATEGIES))
    ap.add_argument("-j", "--jobs", type=int, default=None,
                    help="workers (default: CPUs available)")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    jobs = a.jobs or len(os.sched_getaffinity(0))
    if jobs < 1:
        ap.error("-j must be positive")
    failed = 0
    files = []
    for root in a.paths:
        for kind, path, err in walk(os.fsencode(root)):
            if kind == "file":
                files.append(path)
            else:
                failed += 1
                msg = err.strerror or str(err)
                sys.stderr.buffer.write(b"pyhash: " + escape(path)[1] + b": " + msg.encode() + b"\n")
    files.sort()
    out = sys.stdout.buffer
    try:
        for path, digest, err in STRATEGIES[a.strategy](files, jobs):
            esc, name = escape(path)
            if digest is None:
                failed += 1
                sys.stderr.buffer.write(b"pyhash: " + name + b": " + err.encode() + b"\n")
                continue
            out.write((b"\\" if esc else b"") + digest.encode() + b"  " + name + b"\n")
        out.flush()
    except BrokenPipeError:
        # A closed stdout (| head) is a quiet exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
