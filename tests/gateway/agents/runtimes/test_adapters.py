"""Runtime adapters: NDJSON from the CLIs parsed into one event vocabulary, and the exact command lines.

Every golden file was captured from the real CLI (npm, pinned in scripts/install-agent-clis) driven by
the loopback fake model servers and the real MCP shim.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from gateway.agents.runtimes import McpServer, RunSpec, get_runtime
from gateway.agents.runtimes.base import Event

GOLDEN = Path(__file__).parent / "golden"


def parse(runtime: str, name: str) -> list[Event]:
    parser = get_runtime(runtime).parser()
    events: list[Event] = []
    for line in (GOLDEN / name).read_text().splitlines():
        events += parser.feed(json.loads(line))
    return events + parser.finish()


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events]


def test_claude_tool_call() -> None:
    ev = parse("claude", "claude-tool-call.ndjson")
    assert kinds(ev) == ["tool_use", "tool_result", "text", "done"]
    assert ev[0].tool_name == "mcp__remoteclaw__sessions_spawn" and ev[0].tool_input["label"] == "kid"
    assert ev[1].tool_id == ev[0].tool_id and '"status": "accepted"' in ev[1].tool_output and not ev[1].is_error
    assert ev[3].session_id == "5140d8d5-41ef-44a3-83a1-33b32bb36aa4" and ev[3].text.startswith("done:")
    assert ev[3].usage == {"input": 200, "output": 40, "cacheRead": 0, "cacheWrite": 0}


def test_claude_expired_resume_is_recognised() -> None:
    ev = parse("claude", "claude-expired.ndjson")
    assert kinds(ev) == ["error", "done"] and ev[1].is_error
    assert get_runtime("claude").session_expired(ev[0].text)


def test_codex_tool_call_and_resume() -> None:
    ev = parse("codex", "codex-tool-call.ndjson")
    assert kinds(ev) == ["error", "tool_use", "tool_result", "text", "done"]  # the error is a metadata warning
    assert ev[1].tool_name == "mcp__remoteclaw__sessions_spawn" and ev[1].tool_input == {
        "task": "REPLY child says hi", "label": "kid"}
    assert "agent:main:subagent:" in ev[2].tool_output
    assert ev[4].session_id == "01a20121-77cc-7e20-b097-09c454f050b9"
    assert ev[4].usage == {"input": 200, "output": 60, "cacheRead": 40, "cacheWrite": 0}
    resumed = parse("codex", "codex-resumed.ndjson")
    assert resumed[-1].session_id == ev[4].session_id and resumed[-2].text == "second turn"


def test_gemini_stream() -> None:
    ev = parse("gemini", "gemini-tool-call.ndjson")
    assert kinds(ev) == ["tool_use", "tool_result", "text", "done"]
    assert ev[0].tool_name == "mcp__remoteclaw__sessions_list" and ev[0].tool_input == {"limit": 5}
    assert ev[1].tool_id == ev[0].tool_id and '"count": 0' in ev[1].tool_output and not ev[1].is_error
    assert ev[2].text.startswith("done:")  # the streamed deltas are joined into one block
    assert ev[3].usage == {"input": 200, "output": 18, "cacheRead": 40, "cacheWrite": 0}
    assert ev[3].session_id == "b424a234-9950-4d75-8036-b853f70bb1dc" and ev[3].model == "gemini-2.5-flash"
    resumed = parse("gemini", "gemini-resumed.ndjson")
    assert kinds(resumed) == ["text", "done"] and resumed[0].text == "second turn"
    assert resumed[1].session_id == ev[3].session_id


def test_gemini_stale_resume_is_recognised() -> None:
    # Gemini CLI 0.61 prints nothing on stdout for an unknown --resume id; this is its stderr (exit 42).
    stderr = 'Error resuming session: Invalid session identifier "00000000-9950-4d75-8036-b853f70bb1dc".'
    assert get_runtime("gemini").session_expired(stderr)


def test_opencode_stream() -> None:
    ev = parse("opencode", "opencode-tool-call.ndjson")
    assert kinds(ev) == ["tool_use", "tool_result", "text", "done"]
    assert ev[0].tool_name == ev[1].tool_name == "mcp__remoteclaw__sessions_list"
    assert ev[0].tool_input == {"limit": 5} and '"count": 0' in ev[1].tool_output and not ev[1].is_error
    assert ev[-1].usage == {"input": 200, "output": 60, "cacheRead": 40, "cacheWrite": 0}
    assert ev[-1].session_id == "ses_dfec61ef4ffenqoWRoUfSS7RWz"
    resumed = parse("opencode", "opencode-resumed.ndjson")
    assert kinds(resumed) == ["text", "done"] and resumed[0].text == "second turn"
    assert resumed[1].session_id == ev[-1].session_id
    # OpenCode 1.18 on an unknown --session id: no stdout, exit 1, this on stderr.
    assert get_runtime("opencode").session_expired("Error: Session not found")


@pytest.fixture
def spec(tmp_path: Path) -> RunSpec:
    ctx = {"REMOTECLAW_SESSION_KEY": "agent:main:main", "REMOTECLAW_GATEWAY_TOKEN": "secret-token"}
    return RunSpec(prompt="hi", system_prompt="be brief", workspace=tmp_path / "ws",
                   mcp=McpServer(command="/py", args=("-m", "mcp_shim"), env=ctx), state_dir=tmp_path / "state",
                   env={"CODEX_HOME": str(tmp_path / "user-codex")})


def test_claude_argv(spec: RunSpec) -> None:
    inv = get_runtime("claude").build(spec)
    assert inv.argv[:2] == ["claude", "-p"] and "--strict-mcp-config" in inv.argv and "--resume" not in inv.argv
    assert inv.argv[inv.argv.index("--allowedTools") + 1] == "mcp__remoteclaw"
    cfg = json.loads(next(iter(inv.files.values())))
    assert cfg["mcpServers"]["remoteclaw"]["env"]["REMOTECLAW_SESSION_KEY"] == "agent:main:main"
    assert inv.stdin == b"hi"
    spec.resume_id = "abc"
    assert get_runtime("claude").build(spec).argv[-2:] == ["--resume", "abc"]


def test_claude_permission_modes(spec: RunSpec) -> None:
    """``agents.list[].permissions``: what each mode passes (the real CLI runs them in test_claude_approvals)."""

    def flag(argv: list[str], name: str) -> str | None:
        return argv[argv.index(name) + 1] if name in argv else None

    argv = get_runtime("claude").build(spec).argv
    assert flag(argv, "--permission-mode") == "dontAsk" and "--permission-prompt-tool" not in argv
    spec.permissions = "ask"
    argv = get_runtime("claude").build(spec).argv
    assert flag(argv, "--permission-mode") == "manual" and flag(argv, "--allowedTools") == "mcp__remoteclaw"
    assert flag(argv, "--permission-prompt-tool") == "mcp__remoteclaw__approval_prompt"
    spec.permissions = "ask-dangerous"
    argv = get_runtime("claude").build(spec).argv
    assert flag(argv, "--allowedTools") == "mcp__remoteclaw,Read,Glob,Grep,LS,NotebookRead,TodoWrite,WebSearch"
    spec.permissions = "bypass"
    argv = get_runtime("claude").build(spec).argv
    assert flag(argv, "--permission-mode") == "bypassPermissions" and "--permission-prompt-tool" not in argv


def test_codex_config_never_touches_the_user_file(spec: RunSpec, tmp_path: Path) -> None:
    user = tmp_path / "user-codex"
    user.mkdir()
    (user / "config.toml").write_text('model = "o9"\n[mcp_servers.theirs]\ncommand = "x"\n')
    before = (user / "config.toml").read_text()
    inv = get_runtime("codex").build(spec)
    assert inv.env["CODEX_HOME"] != str(user) and (user / "config.toml").read_text() == before
    cfg = tomllib.loads(inv.files[Path(inv.env["CODEX_HOME"]) / "config.toml"])
    assert cfg["model"] == "o9" and list(cfg["mcp_servers"]) == ["remoteclaw"]
    server = cfg["mcp_servers"]["remoteclaw"]
    assert server["required"] is True and server["env"]["REMOTECLAW_GATEWAY_TOKEN"] == "secret-token"
    assert cfg["check_for_update_on_startup"] is False and cfg["features"]["plugins"] is False
    assert inv.argv[1:] == ["exec", "--json", "--skip-git-repo-check", "-"]
    spec.resume_id = "t1"
    assert get_runtime("codex").build(spec).argv[1:] == ["exec", "resume", "--json", "--skip-git-repo-check", "t1",
                                                         "-"]


def test_gemini_and_opencode_put_context_in_the_server_env(spec: RunSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    inv = get_runtime("gemini").build(spec)
    settings = json.loads(inv.files[spec.workspace / ".gemini" / "settings.json"])
    assert settings["mcpServers"]["remoteclaw"]["env"]["REMOTECLAW_GATEWAY_TOKEN"] == "secret-token"
    assert inv.argv[-2:] == ["--prompt", "hi"] and inv.env["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    assert "security" not in settings  # the user's own auth choice stands unless a base URL is set
    spec.env["GOOGLE_GEMINI_BASE_URL"] = "http://127.0.0.1:9"
    settings = json.loads(get_runtime("gemini").build(spec).files[spec.workspace / ".gemini" / "settings.json"])
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    inv = get_runtime("opencode").build(spec)
    cfg = json.loads(inv.files[spec.workspace / "opencode.json"])
    assert cfg["mcp"]["remoteclaw"]["command"] == ["/py", "-m", "mcp_shim"]
    assert cfg["mcp"]["remoteclaw"]["environment"]["REMOTECLAW_SESSION_KEY"] == "agent:main:main"
    assert inv.stdin == b"hi" and "hi" not in inv.argv and inv.env["PWD"] == str(spec.workspace)
    spec.resume_id = "ses_1"
    assert get_runtime("opencode").build(spec).argv[-2:] == ["--session", "ses_1"]
