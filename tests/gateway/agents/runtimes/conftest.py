"""Real agent CLIs from npm (installed by ``scripts/install-agent-clis``): skipped locally if missing, failed in CI."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support import ROOT
from tests.support.requires import require

CLI_DIR = Path(os.environ.get("REMOTECLAW_AGENT_CLIS") or ROOT / ".agent-clis") / "node_modules" / ".bin"


def cli(name: str) -> str:
    path = CLI_DIR / name
    require(path.exists(), f"{name} is not installed (run scripts/install-agent-clis)")
    return str(path)
