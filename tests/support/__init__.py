"""Test support: real gateway processes on free loopback ports, and raw protocol clients."""

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
"""This folder: the stand-in CLIs and fakes that tests start as processes live here."""
ROOT = SUPPORT.parents[1]
"""The repository root."""
FAKE_CLI = str(SUPPORT / "fake_cli.py")
"""The stand-in agent CLI (``tests/support/fake_cli.py``)."""
