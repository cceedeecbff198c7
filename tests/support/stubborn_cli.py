"""A stand-in agent CLI for any runtime that, asked to, ignores SIGTERM: the far side of the /stop tests.

It takes the prompt where the runtime's adapter puts it (stdin, or ``--prompt`` for Gemini) and speaks the
output format named by ``$STUBBORN_RUNTIME`` (claude, codex, gemini, opencode). With ``hang-forever`` in the
prompt it ignores SIGTERM, starts a child (as a CLI starts its MCP server), appends both pids to
``$STUBBORN_PIDS``, prints one event and sleeps; only SIGKILL ends it. Otherwise it answers ``done: <prompt>``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def out(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(runtime: str, text: str) -> None:
    """One complete turn in ``runtime``'s stream format."""
    if runtime == "codex":
        out({"type": "thread.started", "thread_id": "t-stubborn"})
        out({"type": "item.completed", "item": {"type": "agent_message", "id": "i1", "text": text}})
        out({"type": "turn.completed", "usage": {"input_tokens": 7, "output_tokens": 3}})
    elif runtime == "gemini":
        out({"type": "init", "session_id": "g-stubborn", "model": "fake"})
        out({"type": "message", "role": "assistant", "content": text})
        out({"type": "result", "status": "success", "stats": {"input_tokens": 7, "output_tokens": 3}})
    elif runtime == "opencode":
        out({"type": "text", "sessionID": "o-stubborn", "part": {"text": text}})
        out({"type": "step_finish", "sessionID": "o-stubborn", "part": {"tokens": {"input": 7, "output": 3}}})
    else:
        out({"type": "system", "subtype": "init", "session_id": "c-stubborn", "model": "fake"})
        out({"type": "assistant", "session_id": "c-stubborn", "message": {"content": [{"type": "text", "text": text}]}})
        out(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "session_id": "c-stubborn",
                "result": text,
                "usage": {"input_tokens": 7, "output_tokens": 3},
            }
        )


def main() -> int:
    argv = sys.argv[1:]
    prompt = argv[argv.index("--prompt") + 1] if "--prompt" in argv else sys.stdin.read()
    runtime = os.environ.get("STUBBORN_RUNTIME", "claude")
    if "hang-forever" not in prompt:
        answer(runtime, "done: " + prompt.strip().splitlines()[-1])
        return 0
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"]
    )
    with open(os.environ["STUBBORN_PIDS"], "a") as fh:
        fh.write(json.dumps({"cli": os.getpid(), "child": child.pid,
                             "run": os.environ.get("REMOTECLAW_RUN_ID")}) + "\n")
    out({"type": "system", "subtype": "status", "session_id": "stubborn"})
    time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
