"""``python -m nodes``: the node host (same as ``remoteclaw-node``)."""

from nodes.cli import main

raise SystemExit(main())
