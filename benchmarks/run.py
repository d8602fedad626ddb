"""Benchmark harness entry point: ``python benchmarks/run.py --help`` (same as ``jaxdyn bench``).

Peers are imported if installed (Pinocchio as ``pin``); install them in a separate environment,
never as jaxdyn dependencies:  ``pip install pin``.
"""

import sys

from harness import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
