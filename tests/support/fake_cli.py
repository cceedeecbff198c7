"""A stand-in agent CLI that speaks Claude Code's stream-json: the far side for queue and executor tests.

It reads the prompt on stdin (as Claude does with ``-p``) and acts on directives in it:

- ``sleep:<s>`` answer after s seconds, printing a status line every 0.25 s meanwhile;
- ``hang`` print one event, then go silent (for the no-output watchdog);
- ``fail`` end with an error result; ``crash`` exit 3 with a message on stderr;
- ``expired`` fail like a stale ``--resume`` id when resumed;
- ``sent:<text>`` record a ``message_sent`` side effect to the run's own chat (as a message tool
  would), then answer <text>;
- ``tools:<n>`` call n (pretend) tools, ``Bash`` then ``mcp__remoteclaw__sessions_list`` in turn, 0.8 s
  apart, before answering;
- ``stream:<n>`` write the answer in n pieces 0.5 s apart, as ``stream_event`` text deltas when run with
  ``--include-partial-messages`` (as Claude Code does), then the whole block;
- ``ask:<command>`` ask the person about running ``<command>`` through the MCP shim's ``approval_prompt`` (run as
  ``remoteclaw call``, the shim's own code path), then answer ``approval: allow`` or ``approval: deny``;
- ``question:<text>`` ask the person ``<text>`` with the options Postgres and SQLite through the shim's
  ``ask_user``, then answer ``answer: <the labels chosen>`` (or ``answer: none``);
- ``tool:<name> <JSON object>`` call that shim tool with those arguments (as ``remoteclaw call``), then answer
  ``tool: <its output>``;
- ``mcp:<name> <JSON object>`` call that tool as Claude Code does: the MCP server named by ``--mcp-config`` (the
  shim) started and driven by the official MCP SDK's client over stdio, the call shown as a ``tool_use`` and its
  ``tool_result``; then answer ``mcp: <its text>``;
- ``cost:<usd>`` state that cost (``total_cost_usd``) in the result, as Claude Code does;
- ``long:<n>`` answer n characters with a code block; ``silent`` answer NO_REPLY; ``tag`` answer with
  a reply tag; ``show attachments`` answer with the name and first bytes of each file in ``attachments/``;
- ``edit:<path>`` edit a file below its working directory as a coding agent would: a new file gets three
  lines, an existing one has its first line replaced (for the projects and diff tests); done before the tool
  directives above, so a turn can write a file and then send it.

Otherwise it echoes; with ``FAKE_CLI_ECHO_ONLY`` set it always echoes (for fuzzers, whose random text may
contain a directive). With ``--input-format stream-json`` (steering) it takes the prompt from the first JSON
line and afterwards echoes each further user message written to its stdin, until stdin closes; each one it reads is
appended to ``$FAKE_CLI_LOG.steered`` (``{steered: <text>, pid, at}``): a test sees it reached this process.
Every call appends ``{argv, env (REMOTECLAW_*), prompt, cwd, files, attachments}`` to ``$FAKE_CLI_LOG``
(``attachments``: each file the turn was given, in ``attachments/`` or ``.remoteclaw/attachments/``, by name: the
sha256 of its bytes).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import threading
import time
import uuid
from pathlib import Path

_LINES = threading.Lock()  # ``mcp:`` writes status lines from a thread of its own


def out(obj: dict) -> None:
    with _LINES:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def _shim_call(tool: str, args: dict, sid: str) -> str:
    """Run one shim tool as ``remoteclaw call`` (the shim's own code path, with this run's context); its output."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", "import sys; from gateway.cli import main; sys.exit(main())",
                             "call", tool, json.dumps(args)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    while proc.poll() is None:  # a status line now and then: waiting on a person is not silence
        time.sleep(0.25)
        out({"type": "system", "subtype": "status", "session_id": sid})
    return proc.stdout.read().decode() if proc.stdout else ""


def _mcp_call(tool: str, args: dict, argv: list[str], sid: str) -> str:
    """Call ``tool`` through the MCP server the run's ``--mcp-config`` names, with the official MCP SDK's client."""
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    config = json.loads(Path(argv[argv.index("--mcp-config") + 1]).read_text())
    server = next(iter(config["mcpServers"].values()))
    params = StdioServerParameters(command=server["command"], args=list(server.get("args") or []),
                                   env={**os.environ, **(server.get("env") or {})})
    tid = f"toolu_mcp_{tool}"
    out({"type": "assistant", "session_id": sid, "message": {"content": [
        {"type": "tool_use", "id": tid, "name": f"mcp__remoteclaw__{tool}", "input": args}]}})
    done = threading.Event()

    def beat() -> None:  # a status line now and then while the tool works: not silence
        while not done.wait(0.25):
            out({"type": "system", "subtype": "status", "session_id": sid})

    async def call() -> str:
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool(tool, args)
        return "".join(getattr(c, "text", "") for c in result.content)

    threading.Thread(target=beat, daemon=True).start()
    try:
        text = asyncio.run(call())
    finally:
        done.set()
    out({"type": "user", "session_id": sid, "message": {"content": [
        {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": text}]}]}})
    return text


def _ask(command: str, sid: str) -> str:
    """Put ``command`` to the person through the shim's ``approval_prompt``: ``approval: allow`` or ``deny``."""
    answer = _shim_call("approval_prompt", {"tool_name": "Bash", "input": {"command": command}}, sid)
    return "approval: allow" if '"allow"' in answer else "approval: deny"


def _question(text: str, sid: str) -> str:
    """Ask ``text`` (Postgres or SQLite) through the shim's ``ask_user``: ``answer: <labels>`` or ``answer: none``."""
    options = [{"label": "Postgres"}, {"label": "SQLite"}]
    answer = _shim_call("ask_user", {"questions": [{"id": "db", "header": "Database", "question": text,
                                                    "options": options}]}, sid)
    try:
        chosen = json.loads(answer).get("answers", {}).get("db") or []
    except ValueError:
        chosen = []
    return "answer: " + (", ".join(chosen) if chosen else "none")


def main() -> int:
    argv = sys.argv[1:]
    streamed = "--input-format" in argv  # stream-json: one JSON user message a line, stdin kept open
    prompt = _user_text(sys.stdin.readline()) if streamed else sys.stdin.read()
    resume = argv[argv.index("--resume") + 1] if "--resume" in argv else None
    log = os.environ.get("FAKE_CLI_LOG")
    if log:
        files = sorted(str(p) for p in os.listdir(".")) + sorted(os.listdir(".remoteclaw") if os.path.isdir(
            ".remoteclaw") else [])
        given = next((d for d in ("attachments", ".remoteclaw/attachments") if os.path.isdir(d)), None)
        attachments = {name: hashlib.sha256(Path(given, name).read_bytes()).hexdigest()
                       for name in sorted(os.listdir(given))} if given else {}
        tools_file = os.environ.get("REMOTECLAW_PLUGIN_TOOLS_FILE")
        plugin_tools = json.loads(Path(tools_file).read_text()) if tools_file and os.path.exists(tools_file) else None
        with open(log, "a") as fh:
            fh.write(json.dumps({"argv": argv, "prompt": prompt, "cwd": os.getcwd(), "files": files, "pid": os.getpid(),
                                 "attachments": attachments,
                                 "plugin_tools": plugin_tools, "home": os.environ.get("HOME"), "startedAt": time.time(),
                                 "sandboxed": os.environ.get("IS_SANDBOX") == "1",
                                 "env": {k: v for k, v in os.environ.items() if k.startswith("REMOTECLAW_")}}) + "\n")
    sid = resume or str(uuid.uuid4())
    if os.environ.get("FAKE_CLI_ECHO_ONLY"):  # random text (fuzzers) must not be taken for a directive
        reply = f"echo: {prompt.strip()}"
        out({"type": "system", "subtype": "init", "session_id": sid, "model": "fake-model", "tools": [],
             "mcp_servers": [{"name": "remoteclaw", "status": "connected"}]})
        out({"type": "assistant", "session_id": sid, "message": {"content": [{"type": "text", "text": reply}]}})
        out({"type": "result", "subtype": "success", "is_error": False, "session_id": sid, "result": reply,
             "usage": {"input_tokens": 10, "output_tokens": 5}})
        return 0
    if "expired" in prompt and resume:
        sys.stderr.write(f"Error: No conversation found with session ID: {resume}\n")
        return 1
    out({"type": "system", "subtype": "init", "session_id": sid, "model": "fake-model", "tools": [],
         "mcp_servers": [{"name": "remoteclaw", "status": "connected"}]})
    if m := re.search(r"sleep:([\d.]+)", prompt):
        # Working, not silent: a status line every 0.25 s, as a real CLI streams while it thinks,
        # so only ``hang`` ever meets the no-output watchdog.
        until = time.monotonic() + float(m.group(1))
        while (left := until - time.monotonic()) > 0:
            time.sleep(min(0.25, left))
            out({"type": "system", "subtype": "status", "session_id": sid})
    if "hang" in prompt:
        time.sleep(3600)
    if "crash" in prompt:
        sys.stderr.write("fatal: the fake CLI crashed on purpose\n")
        return 3
    if m := re.search(r"tools:(\d+)", prompt):
        for i in range(int(m.group(1))):
            name = "Bash" if i % 2 == 0 else "mcp__remoteclaw__sessions_list"
            tid = f"toolu_step{i}"
            out({"type": "assistant", "session_id": sid, "message": {"content": [
                {"type": "tool_use", "id": tid, "name": name, "input": {"step": i}}]}})
            time.sleep(0.8)
            out({"type": "user", "session_id": sid, "message": {"content": [
                {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": "done"}]}]}})
    for rel in re.findall(r"edit:(\S+)", prompt):
        target = Path(rel)
        if target.is_file():
            lines = target.read_text().splitlines(keepends=True)
            target.write_text("".join(["edited by the agent\n", *lines[1:]]))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("line 1\nline 2\nline 3\n")
    asked = None
    if m := re.search(r"(?<!_)ask:(.+)", prompt):
        asked = _ask(m.group(1).strip(), sid)
    if m := re.search(r"question:(.+)", prompt):
        asked = _question(m.group(1).strip(), sid)
    if m := re.search(r"\btool:(\w+) (\{[^\n]*\})", prompt):
        asked = "tool: " + " ".join(_shim_call(m.group(1), json.loads(m.group(2)), sid).split())[:500]
    if m := re.search(r"\bmcp:(\w+) (\{[^\n]*\})", prompt):
        asked = "mcp: " + " ".join(_mcp_call(m.group(1), json.loads(m.group(2)), argv, sid).split())[:500]
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2, "cache_creation_input_tokens": 1}
    if re.search(r"\bfail\b", prompt):  # the word, so a prompt that merely says "failed" is not a directive
        out({"type": "result", "subtype": "error_during_execution", "is_error": True, "session_id": sid,
             "result": "model overloaded", "usage": usage})
        return 1
    reply = f"echo: {prompt.strip()}"
    if m := re.search(r"sent:(.+)", prompt):
        reply = m.group(1).strip()
        tid = "toolu_1"
        out({"type": "assistant", "session_id": sid, "message": {"content": [
            {"type": "tool_use", "id": tid, "name": "mcp__remoteclaw__message_reply", "input": {"message": reply}}]}})
        with open(os.environ["REMOTECLAW_SIDE_EFFECTS_FILE"], "a") as fh:
            fh.write(json.dumps({"type": "message_sent", "tool": "message_reply",
                                 "provider": os.environ.get("REMOTECLAW_CHANNEL"),
                                 "accountId": os.environ.get("REMOTECLAW_ACCOUNT_ID"),
                                 "to": os.environ.get("REMOTECLAW_TO"), "text": reply}) + "\n")
        out({"type": "user", "session_id": sid, "message": {"content": [
            {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": '{"ok": true}'}]}]}})
    if m := re.search(r"long:(\d+)", prompt):
        n = int(m.group(1))
        code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(n // 12)) + "\n```"
        reply = "Here is the code:\n\n" + code + "\n\nDone."
    if m := re.search(r"stream:(\d+)", prompt):
        pieces = [f"Part {i + 1} of the answer. " for i in range(int(m.group(1)))]
        reply = "".join(pieces).strip()
        for piece in pieces:
            if "--include-partial-messages" in argv:
                out({"type": "stream_event", "session_id": sid, "event": {
                    "type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}})
            time.sleep(0.5)
    if asked is not None:
        reply = asked
    if "silent" in prompt:
        reply = "NO_REPLY"
    if "tag" in prompt:
        reply = "[[reply_to_current]] tagged answer"
    if "show attachments" in prompt:  # in a project the gateway puts them under its own .remoteclaw/
        where = next((d for d in ("attachments", ".remoteclaw/attachments") if os.path.isdir(d)), "attachments")
        seen = sorted(os.listdir(where)) if os.path.isdir(where) else []
        reply = "attachments: " + ", ".join(
            f"{name}={Path(where, name).read_bytes()[:64]!r}" for name in seen)
    out({"type": "assistant", "session_id": sid, "message": {"content": [{"type": "text", "text": reply}]}})
    result = {"type": "result", "subtype": "success", "is_error": False, "session_id": sid, "result": reply,
              "usage": usage}
    if m := re.search(r"cost:([\d.]+)", prompt):
        result["total_cost_usd"] = float(m.group(1))
    out(result)
    if streamed:  # messages steered in while it worked: each answered in turn, until stdin closes
        for line in sys.stdin:
            text = _user_text(line).strip()
            if log:
                with open(log + ".steered", "a") as fh:
                    fh.write(json.dumps({"steered": text, "pid": os.getpid(), "at": time.time()}) + "\n")
            answer = {"content": [{"type": "text", "text": f"echo: {text}"}]}
            out({"type": "assistant", "session_id": sid, "message": answer})
            out({"type": "result", "subtype": "success", "is_error": False, "session_id": sid,
                 "result": f"echo: {text}", "usage": usage})
    return 0


def _user_text(line: str) -> str:
    """The text of one stream-json user message."""
    msg = json.loads(line) if line.strip() else {}
    return "".join(b.get("text", "") for b in (msg.get("message") or {}).get("content") or [])


if __name__ == "__main__":
    sys.exit(main())
