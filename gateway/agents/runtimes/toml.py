"""A small TOML writer for the per-run config files (Python ships a TOML reader, not a writer)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps"]


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # JSON string escapes are valid TOML basic-string escapes
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def dumps(data: dict[str, Any], _prefix: str = "") -> str:
    """Scalars and lists first, then each sub-table as a ``[section]`` (``None`` values are skipped)."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in data.items() if v is not None and not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            name = f"{_prefix}.{_key(k)}" if _prefix else _key(k)
            body = dumps(v, name)
            lines.append(f"\n[{name}]\n{body}" if body.strip() else f"\n[{name}]")
    return "\n".join(lines).strip("\n") + "\n"
