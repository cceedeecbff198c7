"""``python -m gateway.cli``: the ``remoteclaw`` command (the tests and benchmarks start the gateway this way)."""

import sys

from gateway.cli import main

sys.exit(main())
