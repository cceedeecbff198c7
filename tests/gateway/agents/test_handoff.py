"""The /handoff line per runtime, as a value (the Claude Code line is run for real in runtimes/)."""

from __future__ import annotations

import shlex
from pathlib import Path

from gateway.projects.handoff import handoff_command

WS = Path("/tmp/remoteclaw-runs/abc/my session")


def test_each_runtime_resumes_by_its_own_flag_in_the_session_folder() -> None:
    here = f"mkdir -p {shlex.quote(str(WS))} && cd {shlex.quote(str(WS))}"
    assert handoff_command("claude", ["claude"], "c-1", WS) == f"{here} && claude --resume c-1"
    assert handoff_command("gemini", ["gemini"], "g-1", WS) == f"{here} && gemini --resume g-1"
    assert handoff_command("opencode", ["opencode"], "o-1", WS) == f"{here} && opencode --session o-1"
    assert handoff_command("codex", ["codex"], "t-1", WS) == f"{here} && codex resume t-1"
    assert handoff_command("someplugin", ["x"], "1", WS) is None


def test_codex_gets_a_home_whose_sessions_are_the_gateways() -> None:
    line = handoff_command("codex", ["/opt/bin/codex"], "t-1", WS, Path("/state/runtimes/abc"))
    assert line is not None
    assert "ln -sfn /state/runtimes/abc/codex-sessions /state/runtimes/abc/codex-home/sessions" in line
    assert line.endswith("CODEX_HOME=/state/runtimes/abc/codex-home /opt/bin/codex resume t-1")


def test_odd_ids_and_paths_are_quoted() -> None:
    line = handoff_command("claude", ["my claude"], "x; rm -rf ~", WS)
    assert line is not None and line.endswith("'my claude' --resume 'x; rm -rf ~'")
