"""``python -m tmhw.bench --child NAME [...]``: the child process of one bench case."""

import sys

from tmhw.bench.suite import child_main

raise SystemExit(child_main(sys.argv[1:]))
