"""The A2UI check the gateway applies to every canvas push: each fault named by line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.canvas.a2ui import A2UIError, parse_jsonl, validate_messages
from gateway.canvas.page import page_html

EXAMPLES = Path(__file__).resolve().parents[3] / "gateway" / "canvas" / "examples"
BEGIN = '{"beginRendering": {"surfaceId": "main", "root": "root"}}'


@pytest.mark.parametrize("name", ["hello-v08.jsonl", "form-v09.jsonl"])
def test_the_documented_examples_pass(name: str) -> None:
    messages = parse_jsonl((EXAMPLES / name).read_text())
    assert len(messages) == 3


def fault(text: str) -> A2UIError:
    with pytest.raises(A2UIError) as caught:
        parse_jsonl(text)
    return caught.value


def test_a_line_that_is_not_json_is_named() -> None:
    err = fault(BEGIN + "\n{not json}\n")
    assert (err.line, err.field) == (2, "message") and str(err).startswith("line 2: message: is not JSON")


def test_blank_lines_count_so_numbers_match_the_agents_text() -> None:
    bad = '{"surfaceUpdate": {"surfaceId": "m", "components": [{"id": "a", "component": {"Buton": {}}}]}}'
    err = fault(f"{BEGIN}\n\n{bad}")
    assert err.line == 3 and err.field == "surfaceUpdate.components[0].component"
    assert "unknown component 'Buton' (known: AudioPlayer, Button" in str(err)


@pytest.mark.parametrize(("line", "field", "problem"), [
    ({"beginRendering": {"root": "r"}}, "beginRendering.surfaceId", "is required"),
    ({"beginRendering": {"surfaceId": "m", "root": "r"}, "deleteSurface": {"surfaceId": "m"}}, "message",
     "exactly one of"),
    ({"version": "v0.9", "surfaceUpdate": {"surfaceId": "m", "components": []}}, "surfaceUpdate",
     "is a v0.8 message"),
    ({"createSurface": {"surfaceId": "m"}}, "createSurface", "is a v0.9 message"),
    ({"version": "v2", "createSurface": {"surfaceId": "m"}}, "version", "unknown version"),
    ({"surfaceUpdate": {"surfaceId": "m", "components": [{"id": "b", "component": {"Button": {"child": "t"}}}]}},
     "surfaceUpdate.components[0].component.Button.action", "must be an object"),
    ({"version": "v0.9", "updateComponents": {"surfaceId": "m", "components": [{"id": "c", "component": "Column"}]}},
     "updateComponents.components[0].children", "is required"),
    ({"dataModelUpdate": {"surfaceId": "m", "contents": [{"key": "k"}]}}, "dataModelUpdate.contents[0]",
     "exactly one of valueString"),
])
def test_each_fault_names_its_field(line: dict, field: str, problem: str) -> None:
    with pytest.raises(A2UIError) as caught:
        validate_messages([json.loads(BEGIN), line])
    assert caught.value.line == 2 and caught.value.field == field and problem in str(caught.value)


def test_the_canvas_page_pins_its_script_and_keeps_placeholders_out() -> None:
    html = page_html()
    assert "{{" not in html and "script-src 'sha256-" in html and "window.remoteclawA2UI" in html
