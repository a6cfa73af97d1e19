"""Command line of `specx bench` (placeholder until the harness lands)."""
import sys


def main(argv=None):
    print("specx bench: not built yet", file=sys.stderr)
    return 1
