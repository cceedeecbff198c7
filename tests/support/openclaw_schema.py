"""OpenClaw's ``protocol.schema.json`` for tests: load it (or fail with the command that installs it), and
check the frames a test client saw against it.

``FrameLog`` holds what ``tests.support.ws.RawClient`` received while a test ran with the
``openclaw_frames`` marker (see ``tests/conftest.py``): every frame is checked against its frame definition,
a response's payload against the method's ``<Method>Result`` definition, an event's payload against
``<Event>Event``, and ``hello-ok`` against ``HelloOk``. Methods and events OpenClaw does not have (ours
alone), and definitions the package does not publish, are skipped.

Two deviations are allowed, each on purpose and documented in docs/protocol.md: a response to a malformed
request echoes that request's id even when it is not a string (OpenClaw's own gateway does the same, so a
client can correlate), and a node's ``hello-ok`` carries ``auth.nodeId``/``paired``/``requestId`` (its
pairing state, which our node host reads; OpenClaw nodes ignore them).

``PENDING`` names the definitions our frames do not meet yet, each with the reason: those checks are
skipped (and listed in docs/protocol.md) until the frames are reshaped; the list may only shrink.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from gateway.protocol.openclaw_schema import OpenClawSchema, default_path, load

__all__ = ["FrameLog", "params_definition", "require_schema", "result_definition", "schema_or_none"]


def schema_or_none() -> OpenClawSchema | None:
    """The schema, or None when scripts/install-openclaw-protocol has not run."""
    try:
        return load()
    except FileNotFoundError:
        return None


def require_schema() -> OpenClawSchema:
    """The schema; fails the test (never skips, so CI cannot pass by accident) when it is not installed."""
    found = schema_or_none()
    if found is None:
        pytest.fail(f"OpenClaw's protocol schema is not at {default_path()}: run scripts/install-openclaw-protocol")
    return found


def params_definition(method: str) -> str | None:
    return require_schema().params_definition(method)


def result_definition(method: str) -> str | None:
    return require_schema().result_definition(method)


PENDING: dict[str, str] = {}
"""Definition -> why our frames do not meet it yet."""


@dataclass
class FrameLog:
    """Frames received by test clients, with the method of each request id so a result finds its definition."""

    frames: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    """(method of the request it answers, for a response; None otherwise), frame."""

    def received(self, frame: Any, method: str | None = None) -> None:
        if isinstance(frame, dict):
            self.frames.append((method, frame))

    def problems(self, schema: OpenClawSchema) -> list[str]:
        """Every violation, one line each naming the frame it was found in."""
        found: list[str] = []
        for method, frame in self.frames:
            kind = frame.get("type")
            checks: list[tuple[str, Any]] = []
            if kind == "res":
                checks.append(("ResponseFrame", frame if isinstance(frame.get("id"), str) else {**frame, "id": "?"}))
                payload = frame.get("payload")
                if frame.get("ok") and method == "connect":
                    checks.append(("HelloOk", _hello_for_check(payload)))
                elif frame.get("ok") and method in schema.methods:
                    result = schema.result_definition(method)
                    if result is not None:
                        checks.append((result, payload))
                label = f"response to {method}"
            elif kind == "event":
                checks.append(("EventFrame", frame))
                definition = schema.event_definition(str(frame.get("event")))
                if definition is not None:
                    checks.append((definition, frame.get("payload")))
                label = f"event {frame.get('event')}"
            else:
                checks.append(("GatewayFrame", frame))
                label = "frame"
            for definition, value in checks:
                if definition in PENDING:
                    continue
                found.extend(f"{label}: {definition} {v}" for v in schema.violations(definition, value))
        return list(dict.fromkeys(found))  # once each: a test often repeats the same call


def _hello_for_check(hello: Any) -> Any:
    """hello-ok minus the pairing state a node's ``auth`` carries (our addition, see the module docstring)
    and, while pending, the presence entries."""
    if not isinstance(hello, dict):
        return hello
    trimmed = copy.deepcopy(hello)
    auth = trimmed.get("auth")
    if isinstance(auth, dict) and auth.get("role") == "node":
        for key in ("nodeId", "paired", "requestId"):
            auth.pop(key, None)
    snapshot = trimmed.get("snapshot")
    if "HelloOk.snapshot.presence" in PENDING and isinstance(snapshot, dict):
        snapshot["presence"] = []
    return trimmed


_STRING_CANDIDATES = ("x", "main", "agent:main:main", "session:x", "0" * 64, "00000000-0000-4000-8000-000000000000",
                      "https://example.org/x", "2026-11-25T12:00:00Z", "2026-11-25", "UTC+1")


def sample(node: Any, *, full: bool = False, depth: int = 0) -> Any:
    """A value valid under the JSON Schema ``node`` (draft-07 as OpenClaw writes it): its required fields only,
    or with ``full`` every optional field of the top-level object too. Values are plain placeholders."""
    from jsonschema import Draft7Validator

    def valid(value: Any) -> bool:
        return Draft7Validator(node).is_valid(value)

    if not isinstance(node, dict) or not node:
        return "x"
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in node:
            options = [sample(branch, full=full, depth=depth) for branch in node[key]]
            return next((o for o in options if valid(o)), options[0])
    kind = node.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        names = list(props) if full and depth == 0 else list(node.get("required") or [])
        return {name: sample(props.get(name, {}), depth=depth + 1) for name in names}
    if kind == "array":
        return [sample(node.get("items", {}), depth=depth + 1) for _ in range(node.get("minItems", 0))]
    if kind in ("integer", "number"):
        low = node.get("minimum", 1 if node.get("exclusiveMinimum") is None else node["exclusiveMinimum"] + 1)
        return max(int(low), 1) if node.get("maximum", 2) >= 1 else int(low)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if kind == "string":
        minimum = node.get("minLength", 0)
        for text in _STRING_CANDIDATES:
            candidate = text if len(text) >= minimum else text + "x" * (minimum - len(text))
            if valid(candidate):
                return candidate
        return "x" * max(minimum, 1)
    return "x"
