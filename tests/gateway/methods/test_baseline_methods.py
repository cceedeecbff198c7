"""Which gateway methods a non-owner agent run may call is declared at each ``@method`` (``baseline=True``).

This keeps the declarations and the MCP shim in agreement, read from the source: every method a baseline
tool (or the shim's own call path) calls must be marked, and every marked method must be called by one,
so a new tool cannot be locked out of its method, nor a forgotten flag open a method to strangers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gateway.dispatch.dispatcher import registry
from gateway.methods import load_all
from mcp_shim.tools import BASELINE_GROUPS
from tests.support import ROOT

pytestmark = pytest.mark.openclaw_frames  # every frame received is checked against OpenClaw's schema

SHIM = ROOT / "mcp_shim"
BASELINE_SOURCES = [SHIM / "tools" / f"{group}.py" for group in (*BASELINE_GROUPS, "plugin")] + [SHIM / "runner.py"]
ALSO_BASELINE = {"health": "a liveness check any client may make"}


def gateway_calls(path: Path) -> set[str]:
    """Method names passed as string constants to ``….gateway(...)`` calls in one module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "gateway"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "_fire" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
    return found


def test_baseline_declarations_match_what_baseline_tools_call() -> None:
    load_all()
    called = set().union(*(gateway_calls(p) for p in BASELINE_SOURCES))
    marked = {spec.name for spec in registry.specs() if spec.baseline}
    assert called - marked == set(), "called by a baseline tool but not marked baseline=True at its @method"
    assert marked - called - set(ALSO_BASELINE) == set(), "marked baseline=True but no baseline tool calls it"
    assert set(ALSO_BASELINE) <= marked


def test_owner_tool_methods_are_not_baseline() -> None:
    load_all()
    owner_calls = set().union(*(gateway_calls(p) for p in (SHIM / "tools").glob("*.py")
                                if p.stem not in (*BASELINE_GROUPS, "plugin", "_base", "__init__")))
    assert owner_calls, "the scan found no owner-tool calls: it is not reading the tools"
    assert not owner_calls & registry.baseline_names()


def test_the_scan_finds_calls(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("async def f(call):\n    await call.gateway('x.y', {})\n"
                                   "    self._fire('hooks.z', {})\n    await other('no')\n")
    assert gateway_calls(tmp_path / "m.py") == {"x.y", "hooks.z"}
