"""A2UI messages checked line by line before a batch reaches a node's canvas.

A2UI (a2ui.org) describes a UI as JSON messages, one per line. Two versions are accepted:

- v0.8: ``surfaceUpdate``, ``dataModelUpdate``, ``beginRendering``, ``deleteSurface``; components as
  ``{id, component: {Type: props}}``, values as ``{literalString|literalNumber|literalBoolean|path}``.
- v0.9 (lines carry ``"version": "v0.9"``): ``createSurface``, ``updateComponents``, ``updateDataModel``,
  ``deleteSurface``; components as ``{id, component: "Type", ...props}``, values literal or ``{path}``.

Every line is checked before any is accepted, and the first fault is reported with its line number and
the field at fault (``line 3: surfaceUpdate.components[1].component: unknown component 'Buton' ...``), so
an agent can fix its own output. The renderer (``static/a2ui.js``) then never sees a malformed message.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["COMPONENTS", "A2UIError", "parse_jsonl", "validate_messages"]

COMPONENTS = frozenset({"Text", "Image", "Icon", "Video", "AudioPlayer", "Row", "Column", "List", "Card", "Tabs",
                        "Divider", "Modal", "Button", "CheckBox", "TextField", "DateTimeInput", "MultipleChoice",
                        "ChoicePicker", "Slider"})
V08 = ("surfaceUpdate", "dataModelUpdate", "beginRendering", "deleteSurface")
V09 = ("createSurface", "updateComponents", "updateDataModel", "deleteSurface")
VERSIONS = ("v0.8", "v0.9")
MAX_COMPONENTS = 2000


class A2UIError(ValueError):
    """A faulty message: ``line`` (1-based) and ``field`` (a dotted path inside the message)."""

    def __init__(self, line: int, field: str, problem: str) -> None:
        super().__init__(f"line {line}: {field}: {problem}")
        self.line = line
        self.field = field
        self.problem = problem


class _Line:
    def __init__(self, number: int) -> None:
        self.number = number

    def fail(self, field: str, problem: str) -> A2UIError:
        return A2UIError(self.number, field, problem)

    def obj(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"must be an object, not {_kind(value)}")
        return value

    def text(self, holder: dict[str, Any], key: str, field: str, *, required: bool = True) -> str | None:
        value = holder.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{field}.{key}", "is required (a non-empty string)" if value is None
                            else f"must be a non-empty string, not {_kind(value)}")
        return value

    def items(self, holder: dict[str, Any], key: str, field: str) -> list[Any]:
        value = holder.get(key)
        if not isinstance(value, list):
            raise self.fail(f"{field}.{key}", "is required (a list)" if value is None
                            else f"must be a list, not {_kind(value)}")
        return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


def _component_type(line: _Line, name: Any, field: str) -> str:
    if not isinstance(name, str) or name not in COMPONENTS:
        raise line.fail(field, f"unknown component {name!r} (known: {', '.join(sorted(COMPONENTS))})")
    return name


def _components(line: _Line, body: dict[str, Any], field: str, *, v09: bool) -> None:
    components = line.items(body, "components", field)
    if len(components) > MAX_COMPONENTS:
        raise line.fail(f"{field}.components", f"holds {len(components)} components; at most {MAX_COMPONENTS}")
    for i, raw in enumerate(components):
        where = f"{field}.components[{i}]"
        comp = line.obj(raw, where)
        line.text(comp, "id", where)
        if v09:
            kind = _component_type(line, comp.get("component"), f"{where}.component")
            props = comp
        else:
            wrapper = line.obj(comp.get("component"), f"{where}.component")
            if len(wrapper) != 1:
                raise line.fail(f"{where}.component", "must hold exactly one component type, e.g. {\"Text\": {...}}")
            kind = _component_type(line, next(iter(wrapper)), f"{where}.component")
            props = line.obj(wrapper[kind], f"{where}.component.{kind}")
            where = f"{where}.component.{kind}"
        _props(line, kind, props, where, v09=v09)


def _props(line: _Line, kind: str, props: dict[str, Any], where: str, *, v09: bool) -> None:
    if kind in ("Row", "Column", "List"):
        children = props.get("children")
        if children is None:
            raise line.fail(f"{where}.children", "is required")
        if v09 and not isinstance(children, list | dict):
            raise line.fail(f"{where}.children", "must be a list of component ids or a template")
        if not v09:
            children = line.obj(children, f"{where}.children")
            if "explicitList" not in children and "template" not in children:
                raise line.fail(f"{where}.children", "needs explicitList or template")
    if kind in ("Card", "Button") and not isinstance(props.get("child"), str):
        raise line.fail(f"{where}.child", "is required (the id of the component inside)")
    if kind == "Button":
        action = line.obj(props.get("action"), f"{where}.action")
        event = action.get("event")
        named: dict[str, Any] = event if isinstance(event, dict) else action
        line.text(named, "name", f"{where}.action" + (".event" if named is not action else ""))
        context = named.get("context")
        if context is not None and not isinstance(context, list | dict):
            raise line.fail(f"{where}.action.context", "must be a list of {key, value} or an object")
    if kind == "Text" and "text" not in props:
        raise line.fail(f"{where}.text", "is required")
    if kind == "Tabs":
        tabs = props.get("tabItems", props.get("tabs"))
        if not isinstance(tabs, list) or not tabs:
            raise line.fail(f"{where}.tabItems", "is required (a list of {title, child})")
        for i, tab in enumerate(tabs):
            tab = line.obj(tab, f"{where}.tabItems[{i}]")
            if not isinstance(tab.get("child"), str):
                raise line.fail(f"{where}.tabItems[{i}].child", "is required (a component id)")


def _data_contents(line: _Line, body: dict[str, Any], field: str) -> None:
    for i, entry in enumerate(line.items(body, "contents", field)):
        entry = line.obj(entry, f"{field}.contents[{i}]")
        line.text(entry, "key", f"{field}.contents[{i}]")
        values = [k for k in ("valueString", "valueNumber", "valueBoolean", "valueMap") if k in entry]
        if len(values) != 1:
            raise line.fail(f"{field}.contents[{i}]", "needs exactly one of valueString, valueNumber, valueBoolean, "
                                                      "valueMap")
        if values[0] == "valueMap":
            _data_contents(line, {"contents": entry["valueMap"]}, f"{field}.contents[{i}].valueMap")


def _check(line: _Line, message: Any) -> dict[str, Any]:
    message = line.obj(message, "message")
    version = message.get("version", "v0.8")
    if version not in VERSIONS:
        raise line.fail("version", f"unknown version {version!r} (known: {', '.join(VERSIONS)})")
    allowed = V09 if version == "v0.9" else V08
    keys = [k for k in message if k != "version"]
    if len(keys) != 1:
        raise line.fail("message", f"must hold exactly one of {', '.join(allowed)} (found "
                                   f"{', '.join(keys) or 'none'})")
    key = keys[0]
    if key not in allowed:
        other = V08 if version == "v0.9" else V09
        hint = f" ({key} is a {'v0.8' if version == 'v0.9' else 'v0.9'} message: set version accordingly)" \
            if key in other else ""
        raise line.fail(key, f"is not an A2UI {version} message (expected one of {', '.join(allowed)}){hint}")
    body = line.obj(message[key], key)
    line.text(body, "surfaceId", key)
    if key in ("surfaceUpdate", "updateComponents"):
        _components(line, body, key, v09=key == "updateComponents")
    elif key == "beginRendering":
        line.text(body, "root", key)
    elif key == "dataModelUpdate":
        _data_contents(line, body, key)
    elif key == "createSurface":
        line.text(body, "catalogId", key, required=False)
    if "path" in body and body["path"] is not None and not isinstance(body["path"], str):
        raise line.fail(f"{key}.path", "must be a string like /form/name")
    return message


def validate_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """Check already-parsed messages (line = position + 1); raises the first ``A2UIError``."""
    if not isinstance(messages, list):
        raise A2UIError(1, "messages", "must be a list of A2UI messages")
    return [_check(_Line(i + 1), m) for i, m in enumerate(messages)]


def parse_jsonl(text: str, *, max_lines: int = 1000, max_bytes: int = 1_000_000) -> list[dict[str, Any]]:
    """Parse and check A2UI JSONL; blank lines are skipped but counted, so numbers match the agent's text."""
    if len(text.encode()) > max_bytes:
        raise A2UIError(1, "jsonl", f"is larger than {max_bytes} bytes")
    lines = text.splitlines()
    if len(lines) > max_lines:
        raise A2UIError(max_lines + 1, "jsonl", f"has more than {max_lines} lines")
    out = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            message = json.loads(raw)
        except ValueError as exc:
            raise A2UIError(number, "message", f"is not JSON ({getattr(exc, 'msg', exc)})") from None
        out.append(_check(_Line(number), message))
    if not out:
        raise A2UIError(1, "jsonl", "holds no messages")
    return out
