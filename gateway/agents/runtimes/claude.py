"""Claude Code (``claude -p``, stream-json output).

MCP: a per-run ``--mcp-config`` file plus ``--strict-mcp-config``, so the user's own MCP servers
never load; ``--allowedTools mcp__remoteclaw`` with ``--permission-mode dontAsk`` lets our tools
run without a prompt and refuses everything else that would ask. Claude passes its whole
environment to MCP servers, so the ``REMOTECLAW_*`` context goes both in the server's ``env`` and
in the CLI's own environment. The prompt goes on stdin (argv has a per-argument size limit).
``--include-partial-messages`` adds ``stream_event`` lines with the text as the model writes it
(``text_delta`` events: what live replies on chat apps show).

Permissions (``agents.list[].permissions``): ``allowlist`` is the above. ``ask`` and ``ask-dangerous`` run in
``manual`` mode with ``--permission-prompt-tool mcp__remoteclaw__approval_prompt``, so every tool use the
allow-list does not decide goes to the shim's ``approval_prompt``, which waits for the person (the gateway
answers from a stored "allow always" rule first); ``ask-dangerous`` also allows the read-only tools. ``bypass``
is ``bypassPermissions``: everything runs.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.agents.runtimes.base import Event, Invocation, Parser, RunSpec, Runtime

__all__ = ["READ_ONLY_TOOLS", "ClaudeParser", "ClaudeRuntime", "permission_args"]

READ_ONLY_TOOLS = ("Read", "Glob", "Grep", "LS", "NotebookRead", "TodoWrite", "WebSearch")
"""What ``ask-dangerous`` lets run without asking: Claude Code's tools that only read (or keep its own list)."""


def permission_args(mode: str, server: str) -> list[str]:
    """The CLI flags for a permission mode (see the module docstring)."""
    ours = f"mcp__{server}"
    if mode == "bypass":
        return ["--allowedTools", ours, "--permission-mode", "bypassPermissions"]
    if mode in ("ask", "ask-dangerous"):
        allowed = [ours, *(READ_ONLY_TOOLS if mode == "ask-dangerous" else ())]
        return ["--allowedTools", ",".join(allowed), "--permission-mode", "manual",
                "--permission-prompt-tool", f"{ours}__approval_prompt"]
    return ["--allowedTools", ours, "--permission-mode", "dontAsk"]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text")
    return "" if content is None else json.dumps(content)


def _cost(value: Any) -> float | None:
    """``total_cost_usd`` of a result (what Claude Code computed from its price table), if it is a number."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


class ClaudeParser(Parser):
    def __init__(self) -> None:
        super().__init__()
        self.model: str | None = None

    def feed(self, obj: dict[str, Any]) -> list[Event]:
        kind = obj.get("type")
        if obj.get("session_id"):
            self.session_id = obj["session_id"]
        if kind == "system" and obj.get("subtype") == "init":
            self.model = obj.get("model") or self.model
            failed = [s.get("name") for s in obj.get("mcp_servers") or [] if s.get("status") == "failed"]
            return [Event("error", text=f"MCP server failed to start: {', '.join(failed)}")] if failed else []
        if kind == "assistant":
            out: list[Event] = []
            for block in (obj.get("message") or {}).get("content") or []:
                btype = block.get("type")
                if btype == "text" and block.get("text"):
                    out.append(Event("text", text=block["text"]))
                elif btype == "thinking" and block.get("thinking"):
                    out.append(Event("thinking", text=block["thinking"]))
                elif btype == "tool_use":
                    out.append(Event("tool_use", tool_id=block.get("id"), tool_name=block.get("name"),
                                     tool_input=block.get("input")))
            return out
        if kind == "stream_event":  # --include-partial-messages: the text as it is written
            event = obj.get("event") or {}
            delta = event.get("delta") or {}
            if event.get("type") == "content_block_delta" and delta.get("type") == "text_delta" and delta.get("text"):
                return [Event("text_delta", text=str(delta["text"]))]
            return []
        if kind == "user":
            out = []
            for block in (obj.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append(Event("tool_result", tool_id=block.get("tool_use_id"),
                                     tool_output=_text_of(block.get("content")), is_error=bool(block.get("is_error"))))
            return out
        if kind == "result":
            usage = obj.get("usage") or {}
            done = Event(
                "done",
                text=obj.get("result") or "" if isinstance(obj.get("result"), str) else "",
                session_id=self.session_id,
                model=self.model,
                cost_usd=_cost(obj.get("total_cost_usd")),
                usage={
                    "input": int(usage.get("input_tokens") or 0),
                    "output": int(usage.get("output_tokens") or 0),
                    "cacheRead": int(usage.get("cache_read_input_tokens") or 0),
                    "cacheWrite": int(usage.get("cache_creation_input_tokens") or 0),
                },
            )
            if obj.get("is_error") or (obj.get("subtype") not in (None, "success")):
                errs = obj.get("errors")
                msg = done.text or ("; ".join(map(str, errs)) if errs else str(obj.get("subtype") or "error"))
                return [Event("error", text=msg), Event("done", session_id=self.session_id, usage=done.usage,
                                                        model=self.model, is_error=True, cost_usd=done.cost_usd)]
            return [done]
        return []


class ClaudeRuntime(Runtime):
    name = "claude"
    executable = "claude"
    credential_env = ("ANTHROPIC_*", "CLAUDE_*", "AWS_*", "GOOGLE_APPLICATION_CREDENTIALS", "VERTEX_*")
    logins = (".claude", ".claude.json")
    credentials = (".claude/.credentials.json",)
    # ``--input-format stream-json``: user messages are JSON lines on stdin, and Claude Code answers each in
    # turn (a ``result`` per message) until stdin closes, so a message sent mid-turn is answered in this process.
    steerable = True

    def user_message(self, text: str) -> bytes:
        msg = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
        return json.dumps(msg).encode() + b"\n"

    def build(self, spec: RunSpec) -> Invocation:
        cfg_path = spec.workspace / ".remoteclaw" / "mcp.json"
        mcp = {"mcpServers": {spec.mcp.name: {"type": "stdio", "command": spec.mcp.command,
                                               "args": list(spec.mcp.args), "env": spec.mcp.env}}}
        argv = [
            *self.command(spec), "-p",
            "--output-format", "stream-json", "--verbose", "--include-partial-messages",
            "--mcp-config", str(cfg_path), "--strict-mcp-config",
            *permission_args(spec.permissions, spec.mcp.name),
        ]
        if spec.system_prompt:
            argv += ["--append-system-prompt", spec.system_prompt]
        if spec.model:
            argv += ["--model", spec.model]
        if spec.resume_id:
            argv += ["--resume", spec.resume_id]
        env = {**spec.mcp.env, **spec.env}
        if spec.steer:
            return Invocation(argv=[*argv, "--input-format", "stream-json"], env=env, cwd=spec.workspace,
                              files={cfg_path: json.dumps(mcp)}, stdin=self.user_message(spec.prompt), keep_stdin=True)
        return Invocation(argv=argv, env=env, cwd=spec.workspace, files={cfg_path: json.dumps(mcp)},
                          stdin=spec.prompt.encode())

    def parser(self) -> ClaudeParser:
        return ClaudeParser()

    def session_expired(self, message: str) -> bool:
        m = message.lower()
        return "no conversation found" in m or super().session_expired(message)
