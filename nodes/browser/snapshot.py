"""Page snapshots for agents: an outline of the page, one line per element, with refs to act on.

    - heading "Sign in" [level=1] [ref=e3]
    - textbox "Email" [ref=e4]
    - button "Continue" [ref=e5]

The outline is built in the page (``snapshot.js``); refs are stable while an element lives, so ``diff``
can report only what changed since the tab's previous snapshot with the same options.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["diff_lines", "format_nodes", "script"]


@cache
def script() -> str:
    return resources.files("nodes.browser").joinpath("snapshot.js").read_text(encoding="utf-8")


def _line(node: dict[str, Any]) -> str:
    parts = [f"{'  ' * node['depth']}- {node['role']}"]
    if node.get("name"):
        parts.append(json.dumps(node["name"], ensure_ascii=False))
    for key, value in (node.get("props") or {}).items():
        if value is True:
            parts.append(f"[{key}]")
        elif value is not False and value is not None:
            parts.append(f"[{key}={json.dumps(value, ensure_ascii=False) if isinstance(value, str) else value}]")
    if node.get("ref"):
        parts.append(f"[ref={node['ref']}]")
    return " ".join(parts)


def format_nodes(nodes: list[dict[str, Any]], max_chars: int | None) -> tuple[str, bool]:
    """The outline as text, cut at a line boundary when it would pass ``max_chars``."""
    lines: list[str] = []
    size = 0
    for node in nodes:
        line = _line(node)
        if max_chars is not None and size + len(line) + 1 > max_chars:
            return "\n".join(lines), True
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines), False


def diff_lines(before: str | None, after: str) -> dict[str, Any]:
    """What changed between two outlines: lines added and removed (order kept), by content."""
    if before is None:
        return {"baseline": True, "added": after.splitlines(), "removed": []}
    old, new = before.splitlines(), after.splitlines()
    old_set, new_set = set(old), set(new)
    return {"baseline": False, "added": [line for line in new if line not in old_set],
            "removed": [line for line in old if line not in new_set]}
