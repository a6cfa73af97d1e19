#!/usr/bin/env python3
"""pyloader: reads every file under DIR with a pool of threads, as data loaders and build tools
written in Python do (concurrent.futures.ThreadPoolExecutor), and prints their count, total
size and a checksum that does not depend on the order the threads finish in."""
import concurrent.futures
import hashlib
import os
import sys


def digest(path):
    with open(path, "rb") as f:
        data = f.read()
    return len(data), hashlib.sha256(data).digest()


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: pyloader DIR [THREADS]", file=sys.stderr)
        return 2
    paths = sorted(os.path.join(d, name) for d, _, names in os.walk(sys.argv[1]) for name in names)
    threads = int(sys.argv[2]) if len(sys.argv) == 3 else 8
    total = hashlib.sha256()
    size = 0
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for n, d in pool.map(digest, paths):   # map keeps the order of PATHS
            size += n
            total.update(d)
    print(f"files {len(paths)} bytes {size} checksum {total.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
