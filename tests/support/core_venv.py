"""A venv with remoteclaw and no extra: what ``pip install .`` gives a user (tests/test_core_install.py, bench).

Built once per ``pyproject.toml`` (``.cache/core-venv-<checksum>``) as an editable install of this tree, so it
always runs the code under test, with pip's ordinary resolver: a core dependency missing from ``pyproject.toml``
shows there, where the test suite's own venv (every extra) would hide it.
"""

from __future__ import annotations

import subprocess
import sys
import zlib
from pathlib import Path

from tests.support.gateway_proc import ROOT

__all__ = ["core_python"]


def core_python() -> Path:
    """The core-only venv's interpreter, built on first use."""
    stamp = zlib.crc32((ROOT / "pyproject.toml").read_bytes())
    venv = ROOT / ".cache" / f"core-venv-{stamp:08x}"
    python = venv / "bin" / "python"
    if not (venv / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=120)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--config-settings", "editable_mode=compat", "-e", str(ROOT)], check=True, timeout=540)
        (venv / ".installed").write_text("core\n")
    return python
