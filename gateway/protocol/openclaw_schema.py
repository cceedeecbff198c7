"""OpenClaw's published protocol schema (``@openclaw/gateway-protocol``), read as the contract we are held to.

The npm package ships ``protocol.schema.json``: JSON Schema draft-07 with the request/response/event
frames, a ``methods`` table (name -> ``{since, scope}``) and ``definitions`` named after the methods
(``sessions.list`` -> ``SessionsListParams`` / ``SessionsListResult``) and events (``chat`` ->
``ChatEvent``), plus ``HelloOk``. It is a test and documentation input, never read by a running gateway:
``scripts/install-openclaw-protocol`` puts it under ``.cache/openclaw-protocol/`` (or
``$OPENCLAW_PROTOCOL_DIR``), the conformance tests validate our frames with it, and
``gateway.protocol.method_table`` writes the method table of ``docs/protocol.md`` from it.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "PINNED_VERSION",
    "OpenClawSchema",
    "default_path",
    "definition_stem",
    "load",
]

PINNED_VERSION = "2026.9.1"
"""The package version scripts/install-openclaw-protocol installs (keep the two in step)."""

# Methods whose definitions do not follow the ``<Pascal method>Params`` rule in the package.
_IRREGULAR_STEMS: dict[str, str] = {
    "agent.identity.get": "AgentIdentity",
    "conversations.list": "ConversationList",
    "conversations.send": "ConversationSend",
    "conversations.turn": "ConversationTurn",
    "conversations.turn.cancel": "ConversationTurnCancel",
    "openclaw.chat": "SystemAgentChat",
    "openclaw.chat.history": "SystemAgentChatHistory",
    "openclaw.changes.list": "SystemChangesList",
    "openclaw.setup.detect": "SystemAgentSetupDetect",
    "openclaw.setup.activate": "SystemAgentSetupActivate",
    "openclaw.setup.activate.start": "SystemAgentSetupActivateStart",
    "openclaw.setup.auth.start": "SystemAgentSetupAuthStart",
}


def definition_stem(name: str) -> str:
    """The stem of a method's or event's definitions: ``sessions.list`` -> ``SessionsList``,
    ``system-presence`` -> ``SystemPresence``, ``node.invoke.request`` -> ``NodeInvokeRequest``."""
    if name in _IRREGULAR_STEMS:
        return _IRREGULAR_STEMS[name]
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[.\-_:]", name) if part)


def default_path() -> Path:
    """Where scripts/install-openclaw-protocol puts the schema (``$OPENCLAW_PROTOCOL_DIR`` overrides)."""
    base = os.environ.get("OPENCLAW_PROTOCOL_DIR")
    root = Path(base) if base else Path(__file__).resolve().parents[2] / ".cache" / "openclaw-protocol"
    return root / "package" / "protocol.schema.json"


@dataclass(frozen=True, slots=True)
class Violation:
    """One place a value breaks a definition: a JSON pointer into the value and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"at {self.path or '/'}: {self.message}"


class OpenClawSchema:
    """The loaded schema: which methods and events OpenClaw has, their definitions, and validation."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.definitions: dict[str, Any] = document["definitions"]
        self.methods: dict[str, dict[str, Any]] = document["methods"]

    def params_definition(self, method: str) -> str | None:
        """The name of ``method``'s params definition, or None when the package has none."""
        name = definition_stem(method) + "Params"
        return name if name in self.definitions else None

    def result_definition(self, method: str) -> str | None:
        """The name of ``method``'s result definition, or None when the package has none."""
        name = definition_stem(method) + "Result"
        return name if name in self.definitions else None

    def event_definition(self, event: str) -> str | None:
        """The name of an event's payload definition (``chat`` -> ``ChatEvent``), or None."""
        name = definition_stem(event) + "Event"
        return name if name in self.definitions else None

    def properties(self, definition: str) -> dict[str, Any]:
        """The top-level properties a definition lists (empty for one that is not a plain object)."""
        props = self.definitions[definition].get("properties")
        return dict(props) if isinstance(props, dict) else {}

    def required(self, definition: str) -> list[str]:
        req = self.definitions[definition].get("required")
        return list(req) if isinstance(req, list) else []

    def violations(self, definition: str, value: Any) -> list[Violation]:
        """Every way ``value`` breaks ``definition`` (empty when it is valid), deepest first per branch."""
        return [Violation("/" + "/".join(str(p) for p in err.absolute_path), err.message)
                for err in _iter_errors(self._validator(definition), value)]

    def check(self, definition: str, value: Any) -> None:
        """Raise ``AssertionError`` listing the violations when ``value`` breaks ``definition``."""
        found = self.violations(definition, value)
        if found:
            listed = "\n  ".join(str(v) for v in found[:20])
            raise AssertionError(f"{definition} violated:\n  {listed}")

    @functools.cache  # noqa: B019 -- one instance per process, kept for the session
    def _validator(self, definition: str) -> Any:
        from jsonschema import Draft7Validator  # only the tests and the doc generator validate

        if definition not in self.definitions:
            raise KeyError(f"no definition {definition!r} in the OpenClaw schema")
        return Draft7Validator({"$ref": f"#/definitions/{definition}", "definitions": self.definitions})


def _iter_errors(validator: Any, value: Any) -> Iterator[Any]:
    from jsonschema.exceptions import best_match

    errors = list(validator.iter_errors(value))
    # In an anyOf, the branch that got furthest says most about what went wrong.
    for err in errors:
        yield best_match([err]) if err.context else err


@functools.lru_cache(maxsize=4)
def load(path: Path | None = None) -> OpenClawSchema:
    """Read the schema file (``default_path()`` when none is given); FileNotFoundError when it is absent."""
    return OpenClawSchema(orjson.loads((path or default_path()).read_bytes()))
