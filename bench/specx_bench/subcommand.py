"""What `specx bench share` and `specx bench idle`, experiments of their own shape, share: a
parser whose --help is the subcommand's page and whose errors are one line, the options every
experiment has, and its results directory."""
import argparse
import os
import sys
import time

from . import datasets


def parser(name, help_text):
    """The parser of `specx bench NAME`, with -h, --out and --data-dir."""
    class Parser(argparse.ArgumentParser):
        def format_help(self):
            return help_text

        def error(self, message):
            self.exit(2, f"specx bench {name}: {message}; see 'specx bench {name} --help'\n")

    p = Parser(prog=f"specx bench {name}", add_help=False)
    p.add_argument("-h", "--help", action="help")
    p.add_argument("--out")
    p.add_argument("--data-dir", default=datasets.DEFAULT_DATA_DIR)
    return p


def prepare_dirs(name, args):
    """Makes the results directory (--out, default ./bench-results/<UTC timestamp>) and the
    data directory (made absolute in ARGS, and refused in one line where another user could
    change it); returns the results directory."""
    out = args.out or os.path.join("bench-results", time.strftime("%Y%m%dT%H%M%SZ",
                                                                   time.gmtime()))
    try:
        datasets.check_data_dir(args.data_dir)
    except datasets.UnsafeDataDir as e:
        sys.exit(f"specx bench {name}: --data-dir {e}")
    os.makedirs(out, exist_ok=True)
    args.data_dir = os.path.abspath(args.data_dir)
    return out
