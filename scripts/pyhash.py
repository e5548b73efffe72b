#!/usr/bin/env python3
"""pyhash: the classic Python version of hashrace's experiment, as a reference.

Computes a value for every regular file under the given directories and prints
`sha256sum`-format lines sorted by path bytes, with one of four strategies:

  serial    one loop
  threads   concurrent.futures.ThreadPoolExecutor
  procs     concurrent.futures.ProcessPoolExecutor (pays start-up and pickling)
  asyncio   asyncio.to_thread on a thread pool

and one of two kinds of work (--work):

  sha256    hashlib's SHA-256, which releases the GIL while it hashes a buffer over
            2 KiB, so threads run it in parallel;
  pysum     sum(chunk) % 2**32 over the file's 1 MiB chunks, summed mod 2**32 and
            printed as 8 hex digits: pure-Python work that holds the GIL throughout,
            so on an interpreter with a GIL only processes run it in parallel.

-j N sets the workers (and, for procs, batches of about files / (16 N)). Without -j
each pool keeps the standard library's own defaults, as a first program would:
ThreadPoolExecutor's max_workers (min(32, CPUs + 4)), ProcessPoolExecutor's (CPUs)
with chunksize=8, and asyncio's default executor.

Standard library only. Files are read in 1 MiB chunks. With sha256 the output is
byte-identical to `find -H DIR -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum`
(GNU name escaping), so the benchmark harness checks it like the hashrace binaries
before timing it; with pysum it is checked against `hash-bench pysum`, a separate
implementation in Rust. Errors are `pyhash: PATH: reason` on stderr; the run continues
and exits 1.

Usage: pyhash.py {serial,threads,procs,asyncio} [--work sha256|pysum] [-j N] DIR...
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


def sha256_file(path):
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


def pysum_file(path):
    """(path, 8 hex digits or None, error text or None): the byte sum mod 2**32."""
    try:
        total = 0
        with open(path, "rb", buffering=0) as f:
            while True:
                b = f.read(CHUNK)
                if not b:
                    break
                total = (total + sum(b)) % 2**32
        return (path, "%08x" % total, None)
    except OSError as e:
        return (path, None, e.strerror or str(e))


WORK = {"sha256": sha256_file, "pysum": pysum_file}


def escape(path):
    """GNU sha256sum escaping: (needs a leading backslash, escaped name)."""
    if b"\\" not in path and b"\n" not in path and b"\r" not in path:
        return False, path
    return True, path.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")


# Each strategy takes the per-file function, the paths and -j (None: the pool's defaults).
def run_serial(work, paths, jobs):
    return [work(p) for p in paths]


def run_threads(work, paths, jobs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(work, paths))


def run_procs(work, paths, jobs):
    # With -j, batches keep pickling and messaging per file small, as a tuned use would;
    # without, chunksize=8 as in the program this experiment started from.
    chunk = 8 if jobs is None else max(1, len(paths) // (jobs * 16))
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(work, paths, chunksize=chunk))


def run_asyncio(work, paths, jobs):
    async def main():
        if jobs is not None:
            loop = asyncio.get_running_loop()
            loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=jobs))
        return await asyncio.gather(*(asyncio.to_thread(work, p) for p in paths))

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
    ap.add_argument("--work", choices=sorted(WORK), default="sha256",
                    help="what is computed per file (default: sha256)")
    ap.add_argument("-j", "--jobs", type=int, default=None,
                    help="workers (default: each pool's standard-library default)")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    if a.jobs is not None and a.jobs < 1:
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
        for path, digest, err in STRATEGIES[a.strategy](WORK[a.work], files, a.jobs):
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
