"""Preconditions that skip a test on a developer's machine but fail it in CI.

CI (``CI=true``, see ``.ci/run``) installs every external tool the suite uses, so a missing one there
is a broken install, not a reason to pass quietly.
"""

from __future__ import annotations

import os

import pytest


def require(condition: bool, reason: str) -> None:
    """Skip (locally) or fail (in CI) the current test unless ``condition`` holds."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must install it: see .ci/run)")
    pytest.skip(reason)
