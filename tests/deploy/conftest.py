"""The ``docker`` marker: tests that drive a real Docker engine (``tests/deploy/test_engine.py``).

They take minutes and need root, so the suite (``./scripts/test``) leaves them out: they are deselected unless
the run's ``-m`` names them (``.ci/run`` runs them as a step of their own: ``pytest -m docker tests/deploy``).
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "docker: drives a real Docker engine and compose (its own CI step)")
    config.addinivalue_line("markers", "chaos: the docker chaos run (in CI's docker step; -m chaos alone)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    asked = config.getoption("-m") or ""
    if "docker" in asked or "chaos" in asked:  # the chaos run is one of them (``-m chaos`` alone names it)
        return
    kept = [item for item in items if item.get_closest_marker("docker") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
