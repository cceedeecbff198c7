"""``gateway.acp.events``: what of the gateway's run events an editor is sent (no I/O, no gateway)."""

from __future__ import annotations

from gateway.acp.events import RunEvents, plan_entries, tool_kind


def chat(text: str) -> dict:
    return {"state": "delta", "message": {"text": text}}


def test_each_delta_sends_only_the_new_text() -> None:
    run = RunEvents("r", "s")
    assert [run.delta(chat(t)) for t in ("Part 1. ", "Part 1. Part 2. ", "Part 1. Part 2.")] == \
        ["Part 1. ", "Part 2. ", ""]
    assert run.rest({"state": "final", "message": {"text": "Part 1. Part 2."}}) == ""


def test_a_rewritten_reply_goes_on_after_a_break_and_an_unstreamed_one_comes_whole() -> None:
    run = RunEvents("r", "s")
    run.delta(chat("Looking."))
    assert run.delta(chat("Done: it works")) == "\n\nDone: it works"
    assert RunEvents("r", "s").rest({"state": "final", "message": {"text": "all at once"}}) == "all at once"


def test_a_plan_is_read_back_and_other_thinking_is_not() -> None:
    assert plan_entries("Plan:\n[x] read\n[~] edit\n[ ] test") == [
        ("read", "completed"), ("edit", "in_progress"), ("test", "pending")]
    assert plan_entries("I should plan this.") == []


def test_tool_kinds() -> None:
    assert tool_kind("Bash: make deploy") == "execute"
    assert tool_kind("Edit") == "edit"
    assert tool_kind("mcp__remoteclaw__sessions_list") == "other"
