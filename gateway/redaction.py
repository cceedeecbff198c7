"""What counts as a secret in config data, hiding it (``config.get``) and putting it back (writes).

First by schema: a field whose JSON Schema says ``"secret": true`` (``gateway.config.sections.secret``;
a plugin's config schema can say the same) is secret whatever it is called. Then, for the open parts of
the config whose shape no schema fixes yet, by shape: a key that looks secret (``token``, ``password``,
``apiKey``, ``subscriptionKey``, a bare ``key`` …), any value inside an ``env`` or ``headers`` map (an
agent's ``env`` holds API keys under any name), and a URL with a password in it. The same rule feeds the
log scrubber, so what ``config.get`` hides never reaches a log line either.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = ["REDACTED", "Path", "redact", "restore_redacted", "schema_secret_paths", "secret_values"]

REDACTED = "__REMOTECLAW_REDACTED__"
"""Stands in for secrets in ``config.get``; sending it back in a patch keeps the stored secret."""

_SECRET_KEY = re.compile(
    r"(token|secret|password|passwd|credentials?|apikey|api_key|privatekey|private_key|subscriptionkey|accesskey"
    r"|access_key|signingkey|^key)$", re.IGNORECASE)

Path = tuple[str, ...]
"""Where a value sits in the config: keys from the root, ``*`` for any key of a map or item of a list."""

_SECRET_CONTAINERS = frozenset({"env", "headers"})
"""Every value inside these maps is secret: an agent's ``env`` holds API keys under any name."""

_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@", re.IGNORECASE)


def schema_secret_paths(schema: dict[str, Any]) -> frozenset[Path]:
    """The paths of every property marked ``"secret": true`` in a JSON Schema (``$ref``s into ``$defs`` followed)."""
    defs = schema.get("$defs", {})
    found: set[Path] = set()

    def walk(node: Any, path: Path, depth: int) -> None:
        if not isinstance(node, dict) or depth > 12:
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            walk(defs.get(ref.split("/")[-1]), path, depth + 1)
        if node.get("secret") is True:
            found.add(path)
        for name, sub in (node.get("properties") or {}).items():
            walk(sub, (*path, name), depth + 1)
        for key in ("additionalProperties", "items"):
            if isinstance(node.get(key), dict):
                walk(node[key], (*path, "*"), depth + 1)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key) or ():
                walk(sub, path, depth + 1)

    walk(schema, (), 0)
    return frozenset(found)


def _on(path: Path, paths: frozenset[Path]) -> bool:
    return any(len(p) == len(path) and all(a in ("*", b) for a, b in zip(p, path, strict=True)) for p in paths)


def _is_secret(key: Any, value: Any, parent: Any, path: Path = (), paths: frozenset[Path] = frozenset()) -> bool:
    """Whether ``value`` (stored under ``key`` in a map stored under ``parent``, at ``path``) must never be shown."""
    if not isinstance(value, str) or not value:
        return False
    return (
        (bool(paths) and _on(path, paths))
        or bool(_SECRET_KEY.search(str(key)))
        or parent in _SECRET_CONTAINERS
        or bool(_URL_WITH_PASSWORD.match(value))  # redis://:pw@host, postgresql://u:pw@host
    )


def redact(data: Any, paths: frozenset[Path] = frozenset(), _parent: Any = None, _path: Path = ()) -> Any:
    """Copy of ``data`` with every secret value replaced by ``REDACTED`` (``paths``: the schema's secrets)."""
    if isinstance(data, dict):
        return {k: (REDACTED if _is_secret(k, v, _parent, (*_path, str(k)), paths)
                    else redact(v, paths, k, (*_path, str(k)))) for k, v in data.items()}
    if isinstance(data, list):
        return [redact(v, paths, _parent, (*_path, str(i))) for i, v in enumerate(data)]
    return data


def restore_redacted(new: Any, old: Any) -> Any:
    """Put stored secrets back where a client echoed ``REDACTED``.

    List items are matched by their ``id`` when they have one (``agents.list``), else by position.
    """
    if new == REDACTED:
        return old
    if isinstance(new, dict):
        old_d = old if isinstance(old, dict) else {}
        return {k: restore_redacted(v, old_d.get(k)) for k, v in new.items()}
    if isinstance(new, list):
        old_l = old if isinstance(old, list) else []
        by_id = {o.get("id"): o for o in old_l if isinstance(o, dict) and o.get("id") is not None}
        out = []
        for i, item in enumerate(new):
            match: Any
            if isinstance(item, dict) and item.get("id") in by_id:
                match = by_id[item["id"]]
            else:
                match = old_l[i] if i < len(old_l) else None
            out.append(restore_redacted(item, match))
        return out
    return new


def secret_values(data: Any, paths: frozenset[Path] = frozenset(), _parent: Any = None,
                  _path: Path = ()) -> Iterator[str]:
    """Every secret string in ``data`` (the values ``redact`` hides), so the logger can scrub it."""
    if isinstance(data, dict):
        for k, v in data.items():
            if _is_secret(k, v, _parent, (*_path, str(k)), paths):
                yield v
            else:
                yield from secret_values(v, paths, k, (*_path, str(k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from secret_values(v, paths, _parent, (*_path, str(i)))
