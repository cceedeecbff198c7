"""Web chat benchmark: what the page asks the gateway for, and how long a full page takes to show.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/webchat_bench.py           # --sessions 300 --messages 20; ~1 min

A real gateway (SQLite) gets ``--sessions`` web chat sessions of ``--messages`` messages each, posted through
``message.send`` on the ``webchat`` channel (no agent runs), plus one long conversation of 200 messages with
a quote, a reaction and a pin in it. Then, one call at a time:

1. ``sessions.list {limit: 100}`` plain, and with ``includeDerivedTitles`` + ``includeLastMessage`` (what the
   page's conversation list asks for after every finished turn): p50/p95 of 200 calls each;
2. ``chat.history {limit: 200}`` of the long conversation: p50/p95 of 200 calls;
3. in headless Chromium (desktop size), from navigation to the long conversation's last 200 messages and the
   list on screen, p50 of 10 loads.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import RawClient, operator  # noqa: E402

LONG = "agent:main:webchat:long-conversation"


def ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return f"p50 {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


async def timed(client: RawClient, method: str, params: dict[str, Any], n: int = 200) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await client.call(method, params)
        out.append(time.perf_counter() - start)
    return out


async def populate(client: RawClient, sessions: int, messages: int) -> None:
    for i in range(sessions):
        key = f"agent:main:webchat:bench-{i:04d}"
        for j in range(messages):
            await client.call("message.send", {"channel": "webchat", "to": key,
                                               "message": f"message {j} of conversation {i}: " + "lorem ipsum " * 8})
    first = None
    for j in range(200):
        sent = await client.call("message.send", {"channel": "webchat", "to": LONG,
                                                  "message": f"**Step {j}**: `code` and text " + "dolor sit " * 10})
        first = first or sent["messageId"]
    target = {"channel": "webchat", "to": LONG}
    await client.call("message.reply", {**target, "message": "quoting the first", "replyToId": first})
    await client.call("message.react", {**target, "messageId": first, "emoji": "👍"})
    await client.call("message.pin", {**target, "messageId": first})


async def page_loads(gw: GatewayProcess, loads: int) -> list[float]:
    from playwright.async_api import async_playwright

    from tests.channels.webchat.test_webchat_browser import CHROMIUM, CHROMIUM_ARGS

    out = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(loads):
            ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
            page = await ctx.new_page()
            start = time.perf_counter()
            await page.goto(f"{gw.http}/#token={gw.token}&session={LONG}")
            await page.wait_for_function("() => document.querySelectorAll('#messages .msg').length >= 200 &&"
                                         " document.querySelectorAll('.session-item').length > 50")
            out.append(time.perf_counter() - start)
            await ctx.close()
        await browser.close()
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--loads", type=int, default=10, help="page loads timed in Chromium (10)")
    report.options(parser, {"sessions": 30, "messages": 5, "loads": 2})
    args = report.parse(parser)
    with tempfile.TemporaryDirectory() as tmp:
        config = {"agents": {"list": [{"id": "main", "runtime": "claude", "command": ["true"]}]}}
        with GatewayProcess(Path(tmp) / "state", config=config) as gw:
            client = await operator(gw.url, gw.token or "")
            start = time.perf_counter()
            await populate(client, args.sessions, args.messages)
            posted = args.sessions * args.messages + 203
            print(f"posted {posted} messages in {time.perf_counter() - start:.1f} s")
            plain = await timed(client, "sessions.list", {"limit": 100})
            rich = await timed(client, "sessions.list", {"limit": 100, "includeDerivedTitles": True,
                                                         "includeLastMessage": True})
            history = await timed(client, "chat.history", {"sessionKey": LONG, "limit": 200})
            await client.close()
            loads = await page_loads(gw, args.loads)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"sessions.list (100 of {args.sessions + 1}), plain:            {ms(plain)}")
    print(f"sessions.list (100), with titles and last messages: {ms(rich)}")
    print(f"chat.history (200 messages):                       {ms(history)}")
    print(f"page load to 200 messages and the list on screen:  p50 {statistics.median(loads) * 1000:.0f} ms")
    report.write(args.json, {"sessions_list": report.latency([x * 1000 for x in plain]),
                             "sessions_list_rich": report.latency([x * 1000 for x in rich]),
                             "chat_history": report.latency([x * 1000 for x in history]),
                             "page_load_p50_ms": round(statistics.median(loads) * 1000)})


if __name__ == "__main__":
    asyncio.run(main())
