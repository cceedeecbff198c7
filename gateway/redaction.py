"""What counts as a secret in config data, hiding it (``config.get``) and putting it back (writes).

A value is secret when its key looks secret (``token``, ``password``, ``apiKey`` …), when it sits
inside an ``env`` or ``headers`` map (an agent's ``env`` holds API keys under any name), or when it
is a URL with a password in it. The same rule feeds the log scrubber, so what ``config.get`` hides
never reaches a log line either.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = ["REDACTED", "redact", "restore_redacted", "secret_values"]

REDACTED = "__REMOTECLAW_REDACTED__"
"""Stands in for secrets in ``config.get``; sending it back in a patch keeps the stored secret."""

_SECRET_KEY = re.compile(r"(token|secret|password|apikey|api_key|privatekey)$", re.IGNORECASE)

_SECRET_CONTAINERS = frozenset({"env", "headers"})
"""Every value inside these maps is secret: an agent's ``env`` holds API keys under any name."""

_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@", re.IGNORECASE)


def _is_secret(key: Any, value: Any, parent: Any) -> bool:
    """Whether ``value`` (stored under ``key`` in a map stored under ``parent``) must never be shown."""
    if not isinstance(value, str) or not value:
        return False
    return (
        bool(_SECRET_KEY.search(str(key)))
        or parent in _SECRET_CONTAINERS
        or bool(_URL_WITH_PASSWORD.match(value))  # redis://:pw@host, postgresql://u:pw@host
    )


def redact(data: Any, _parent: Any = None) -> Any:
    """Copy of ``data`` with every secret value replaced by ``REDACTED``."""
    if isinstance(data, dict):
        return {k: (REDACTED if _is_secret(k, v, _parent) else redact(v, k)) for k, v in data.items()}
    if isinstance(data, list):
        return [redact(v, _parent) for v in data]
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


def secret_values(data: Any, _parent: Any = None) -> Iterator[str]:
    """Every secret string in ``data`` (the values ``redact`` hides), so the logger can scrub it."""
    if isinstance(data, dict):
        for k, v in data.items():
            if _is_secret(k, v, _parent):
                yield v
            else:
                yield from secret_values(v, k)
    elif isinstance(data, list):
        for v in data:
            yield from secret_values(v, _parent)
