"""Writes ``gateway/methods/index.json``: each method module and the names it declares, read by a start so it
imports no method module until one of its methods is called (``gateway.methods.defer_all``).

Run after adding, renaming or moving a method (``tests/gateway/dispatch/test_method_index.py`` says when)::

    .venv/bin/python -m gateway.dispatch.method_index
"""

from __future__ import annotations

import importlib
import sys

import orjson

__all__ = ["build", "write"]


def build() -> dict[str, dict[str, list[str]]]:
    """Import the method modules one by one; what each adds to the registry is its entry."""
    from gateway.dispatch.registry import registry
    from gateway.methods import modules

    index: dict[str, dict[str, list[str]]] = {}
    for module in modules():
        before = set(registry.names())
        importlib.import_module(module)
        added = sorted(set(registry.names()) - before)
        if added:
            specs = [registry.get(name) for name in added]
            index[module] = {"names": added,
                             "aliases": sorted(a for spec in specs if spec is not None for a in spec.aliases)}
    return index


def write() -> None:
    from gateway.methods import INDEX_FILE

    INDEX_FILE.write_bytes(orjson.dumps(build(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    print(f"wrote {INDEX_FILE}", file=sys.stderr)


if __name__ == "__main__":
    write()
