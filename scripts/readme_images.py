"""Make the README's pictures from a run that looks like a user's, so they stay true as the pages change.

    .venv/bin/python scripts/readme_images.py [--out docs/images]

A real gateway on 127.0.0.1 with a fresh state dir and HOME, whose agent is Claude Code as a user has it:
``claude`` on PATH (here a stand-in that answers in Claude Code's stream-json, with a tool call and a code
block, so no model or network is needed). Headless Chromium (Debian's ``/usr/bin/chromium``) opens the link
the gateway printed, as a person would, asks one question, and takes:

- ``webchat.png``: the web chat at a desktop's size (1280x800);
- ``webchat-phone.png``: the same conversation at a phone's (390x844);
- ``control-ui-chat.png`` and ``control-ui-sessions.png``: OpenClaw's Control UI served by the gateway, when it
  is installed (``scripts/install-openclaw``); skipped with a note otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.server.control_ui import DEFAULT_ROOT  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]
QUESTION = "Which conversations are open right now?"

CLAUDE = textwrap.dedent('''\
    #!{python}
    """Stands in for Claude Code: its stream-json, a tool call through the gateway's MCP tools, a code block."""
    import json, sys, time, uuid

    def out(obj):
        sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()

    sys.stdin.read()
    sid = str(uuid.uuid4())
    out({{"type": "system", "subtype": "init", "session_id": sid, "model": "claude-sonnet-4-5"}})
    def say(text):
        out({{"type": "assistant", "session_id": sid, "message": {{"content": [{{"type": "text", "text": text}}]}}}})
    say("Let me list them.")
    time.sleep(0.4)
    out({{"type": "assistant", "session_id": sid, "message": {{"content": [{{"type": "tool_use", "id": "t1",
        "name": "mcp__remoteclaw__sessions_list", "input": {{"limit": 10}}}}]}}}})
    time.sleep(0.4)
    out({{"type": "user", "session_id": sid, "message": {{"content": [{{"type": "tool_result", "tool_use_id": "t1",
        "content": [{{"type": "text", "text": json.dumps(["agent:main:main"])}}]}}]}}}})
    reply = ("One conversation is open, this one:\\n\\n```\\nagent:main:main\\n```\\n\\n"
             "Ask me to start a project or schedule a job and it will show up in the list on the left.")
    say(reply)
    out({{"type": "result", "subtype": "success", "session_id": sid, "result": reply, "total_cost_usd": 0.0042,
         "usage": {{"input_tokens": 2150, "output_tokens": 61, "cache_read_input_tokens": 0}}}})
''')


def stand_in_claude(home: Path) -> Path:
    """``~/.local/bin`` holding ``claude`` (where Claude Code's installer puts it), to put first on PATH."""
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    claude = bin_dir / "claude"
    claude.write_text(CLAUDE.format(python=sys.executable))
    claude.chmod(0o755)
    return bin_dir


async def web_chat(browser: Any, link: str, out: Path) -> None:
    for name, options in (("webchat.png", {"viewport": {"width": 1280, "height": 800}}),
                          ("webchat-phone.png", {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
                                                 "is_mobile": True, "has_touch": True})):
        ctx = await browser.new_context(**options)
        page = await ctx.new_page()
        await page.goto(link)
        await page.wait_for_selector('#status[data-state="online"]', timeout=15_000)
        if name == "webchat.png":  # the question is asked once; the phone opens the same conversation
            await page.fill("#input", QUESTION)
            await page.click("#send")
        await page.locator(".turn .msg.assistant").filter(has_text="show up in the list").first.wait_for(
            timeout=30_000)
        await page.wait_for_timeout(300)
        await page.screenshot(path=str(out / name))
        print(f"  {out / name}")
        await ctx.close()


async def control_ui(browser: Any, base: str, out: Path) -> None:
    ctx = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await ctx.new_page()
    await page.goto(base)
    await page.get_by_text("Automations").first.wait_for(timeout=20_000)
    for path, name in (("/chat", "control-ui-chat.png"), ("/sessions", "control-ui-sessions.png")):
        await page.evaluate("p => { history.pushState(null, '', p); dispatchEvent(new PopStateEvent('popstate')); }",
                            "/openclaw" + path)
        await page.wait_for_timeout(1500)
        if path == "/chat":
            await page.get_by_text("show up in the list").first.wait_for(timeout=15_000)
        await page.screenshot(path=str(out / name))
        print(f"  {out / name}")
    await ctx.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="where the PNGs go")
    args = ap.parse_args()
    if not os.path.exists(CHROMIUM):
        print(f"readme-images: needs {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(pictures(args.out, control_ui_installed=(ROOT / DEFAULT_ROOT / "index.html").is_file()))
    return 0


async def pictures(out: Path, *, control_ui_installed: bool) -> None:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory(prefix="readme-images-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        path = f"{stand_in_claude(root / 'home')}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        config = {"agents": {"list": [{"id": "main", "runtime": "claude", "model": "claude-sonnet-4-5"}]}}
        gw = GatewayProcess(root / "state", config=config, token=None, env={"PATH": path, "HOME": str(root / "home")})
        with gw:
            printed = re.search(r"web chat: (http://\S+/#token=\S+)", gw.output())
            assert printed, gw.output()
            link = printed.group(1).replace("localhost", "127.0.0.1")
            pw = await async_playwright().start()
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                await web_chat(browser, link, out)
                if control_ui_installed:
                    await control_ui(browser, f"http://127.0.0.1:{gw.port}/openclaw/#token={gw.token}", out)
                else:
                    print("  Control UI not installed (scripts/install-openclaw): its pictures are left as they are")
            finally:
                await browser.close()
                await pw.stop()


if __name__ == "__main__":
    sys.exit(main())
