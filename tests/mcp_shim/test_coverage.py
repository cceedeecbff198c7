"""Every tool is called through the real shim by some test: the registry in ``covered.py`` must name each
built-in tool and each tool of the plugins in ``plugins/``, and each named test must call it.

Static (the sources are read, nothing is run), so it fails the moment a tool is added without a test."""

from __future__ import annotations

import ast
from pathlib import Path

from mcp_shim.tools import BUILTIN
from tests.mcp_shim.covered import COVERED

ROOT = Path(__file__).resolve().parents[2]


def plugin_tools() -> set[str]:
    """Names the shipped plugins register with ``api.tool("name", ...)`` (as a call or a decorator)."""
    names: set[str] = set()
    for path in (ROOT / "plugins").glob("*/*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "tool" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


def _tools_called(fn: ast.AST) -> set[str]:
    """String arguments of ``call``/``call_ok`` calls (``shim.call("x", ...)``, ``call(shim, "x", ...)``)."""
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else None
            if name in ("call", "call_ok"):
                out.update(a.value for a in node.args[:2] if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return out


def called_by(test_id: str) -> set[str]:
    """Tools the test calls, itself or through a function of its module it calls (one level)."""
    path, name = test_id.split("::")
    tree = ast.parse((ROOT / path).read_text())
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    test = functions.get(name)
    assert test is not None, f"{test_id}: no such test"
    found = _tools_called(test)
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
            found |= _tools_called(functions[node.func.id])
    return found


def test_the_registry_lists_exactly_the_catalogue() -> None:
    catalogue = {t.name for t in BUILTIN} | plugin_tools()
    missing, stale = sorted(catalogue - set(COVERED)), sorted(set(COVERED) - catalogue)
    assert not missing, f"tools without a shim test (add one and list it in tests/mcp_shim/covered.py): {missing}"
    assert not stale, f"tests/mcp_shim/covered.py lists tools that do not exist: {stale}"


def test_each_listed_test_calls_its_tool() -> None:
    wrong = {tool: test for tool, test in COVERED.items() if tool not in called_by(test)}
    assert not wrong, f"these tests do not call the tool listed for them: {wrong}"
