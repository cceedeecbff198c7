"""A2A benchmark: what the A2A door adds to a turn, over a web chat turn with the same stand-in CLI.

Run on a quiet machine (not part of the tests)::

    .venv/bin/python bench/a2a_bench.py            # --turns 40; ~1 min

One real gateway (SQLite, the stand-in agent CLI ``tests/support/fake_cli.py``, A2A on), one peer (a person with a
token made for them). Alternating, one at a time, each in a fresh conversation:

- web chat: ``chat.send`` over the WebSocket, then ``agent.wait`` until the run's end (what the page does);
- A2A blocking: ``SendMessage`` with a2a-sdk's client (one ``httpx`` connection kept), until the completed task;
- A2A streamed: ``SendStreamingMessage``, until the ``completed`` status event.

p50/p99 of each in ms; the difference of the p50s is what the door adds (the CLI's own start is in all three).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402
from tests.support import FAKE_CLI  # noqa: E402
from tests.support.gateway_proc import GatewayProcess  # noqa: E402
from tests.support.ws import operator  # noqa: E402


async def run(turns: int) -> dict[str, Any]:
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "a2a": {"enabled": True, "requestsPerMinute": 100_000}}
    with tempfile.TemporaryDirectory() as tmp, GatewayProcess(Path(tmp), config=config) as gw:
        owner = await operator(gw.url, gw.token or "")
        await owner.call("people.create", {"id": "peer", "name": "Peer", "role": "member"})
        token = (await owner.call("mcp.tokens.create", {"name": "peer", "personId": "peer"}))["token"]
        samples: dict[str, list[float]] = {"webchat": [], "a2a_blocking": [], "a2a_streamed": []}
        async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http:
            url = f"{gw.http}/a2a/main"
            blocking = await ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create_from_url(url)
            streamed = await ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create_from_url(url)

            async def a2a(client: Any) -> None:
                msg = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text="hello")],
                              context_id=uuid.uuid4().hex)
                async for _event in client.send_message(SendMessageRequest(message=msg)):
                    pass

            for i in range(turns + 2):  # two warm-up rounds
                start = time.perf_counter()
                sent = await owner.call("chat.send", {"sessionKey": f"agent:main:webchat:b{i}", "message": "hello",
                                                      "idempotencyKey": uuid.uuid4().hex})
                await owner.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 30_000}, timeout=35)
                web = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                await a2a(blocking)
                block = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                await a2a(streamed)
                stream = (time.perf_counter() - start) * 1000
                if i >= 2:
                    samples["webchat"].append(web)
                    samples["a2a_blocking"].append(block)
                    samples["a2a_streamed"].append(stream)
        await owner.close()
    out = {name: report.latency(values) for name, values in samples.items()}
    base = out["webchat"]["p50_ms"]
    out["added_p50_ms"] = {k: round(out[k]["p50_ms"] - base, 2) for k in ("a2a_blocking", "a2a_streamed")}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=40)
    report.options(parser, {"turns": 5})
    args = report.parse(parser, argv)
    figures = asyncio.run(run(args.turns))
    report.write(getattr(args, "json", None), figures)
    import json

    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
