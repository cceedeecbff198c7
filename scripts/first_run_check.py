"""What a new user does after the README's first command (run by ``scripts/check-first-run``).

Reads the link the gateway printed, loads the web chat page it points at, sends a chat message with that token,
and waits until the conversation's history says why no agent answered (no agent CLI is installed in this check).
Runs with the fresh install's own interpreter, so it uses only what a core install has.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import urllib.request
import uuid
from pathlib import Path

from gateway.cli import CliError, call_gateway

LINK = re.compile(r"web chat: (http://[^/\s]+)/#token=(\S+)")


def fail(message: str) -> None:
    print(f"check-first-run: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", type=Path, required=True, help="what ./scripts/gateway printed")
    parser.add_argument("--state", type=Path, required=True, help="the state dir it uses (~/.remoteclaw)")
    args = parser.parse_args()

    found = LINK.search(args.log.read_text(errors="replace"))
    if found is None:
        fail("no signed-in web chat link (http://…/#token=…) in the gateway's output")
    base, token = found.group(1), found.group(2)
    if (args.state / "gateway.token").read_text().strip() != token:
        fail("the link's token is not the one in the state dir")
    print(f"    link printed: {base}/#token=…")

    with urllib.request.urlopen(base + "/", timeout=10) as page:
        html = page.read().decode()
    if page.status != 200 or "<html" not in html.lower():
        fail(f"GET / answered {page.status} without a page")
    print(f"    web chat page loaded ({len(html)} bytes)")

    url = base.replace("http://", "ws://") + "/"
    try:
        agents = call_gateway(url, token, "agents.list", {})
        session = "agent:main:main"
        sent = call_gateway(url, token, "chat.send", {"sessionKey": session, "message": "hello",
                                                       "idempotencyKey": uuid.uuid4().hex})
    except CliError as exc:
        fail(f"the gateway refused a client with the printed token: {exc}")
    print(f"    chat.send accepted (run {sent.get('runId')}); agents: "
          f"{[a.get('id') for a in agents.get('agents', [])]}")

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        history = call_gateway(url, token, "chat.history", {"sessionKey": session})
        for entry in history.get("messages", []):
            if entry.get("error"):  # a failed turn is kept as an entry whose text is the reason
                reason = str(entry.get("text") or entry.get("content") or "")
                if "claude" not in reason:
                    fail(f"the stored failure does not name the missing CLI: {reason}")
                print(f"    chat.history says why: {reason[:120]}")
                return
        time.sleep(0.3)
    fail("no reason for the unanswered message appeared in chat.history within 60 s")


if __name__ == "__main__":
    main()
