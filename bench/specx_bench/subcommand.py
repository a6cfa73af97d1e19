"""What `specx bench share` and `specx bench idle`, experiments of their own shape, share: a
parser whose --help is the subcommand's page and whose errors are one line, the options every
experiment has, and its results directory."""
import argparse
import os
import time


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
    p.add_argument("--data-dir", default="/var/tmp/specx-data")
    return p


def prepare_dirs(args):
    """Makes the results directory (--out, default ./bench-results/<UTC timestamp>) and the
    data directory (made absolute in ARGS); returns the results directory."""
    out = args.out or os.path.join("bench-results", time.strftime("%Y%m%dT%H%M%SZ",
                                                                   time.gmtime()))
    os.makedirs(out, exist_ok=True)
    os.makedirs(args.data_dir, exist_ok=True)
    args.data_dir = os.path.abspath(args.data_dir)
    return out
