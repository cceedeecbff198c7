"""Each of the four agent CLIs for real, in a stranger's sandbox without a network: it reaches its model only
through the model gateway, which adds the real key (the fake asserts it arrived); the run's environment holds a
stand-in. Skipped for a CLI that is not installed (scripts/install-agent-clis)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.gateway.agents.runtimes.flows import agent_gateway, cli_workdir
from tests.gateway.sandbox.test_runtimes_sandboxed import RUNTIMES
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

HEADER = {"claude": "x-api-key", "codex": "authorization", "gemini": "x-goog-api-key", "opencode": "authorization"}


@pytest.mark.parametrize("name", sorted(RUNTIMES))
async def test_a_strangers_real_cli_reaches_its_model_through_the_gateway(
        name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    fake_cls, make = RUNTIMES[name]
    binary, d = cli_workdir(tmp_path_factory, name)
    with fake_cls() as api:
        extra, _ = make(d, api.url)
        agent: dict[str, Any] = {"runtime": name, "command": [binary], **extra}
        with agent_gateway(d, agent, loop_channel=False) as gw:
            c = await operator(gw.url, gw.token or "", scopes=["operator.read", "operator.write"])  # a stranger
            acc = await c.call("chat.send", {"sessionKey": f"agent:main:stranger-{name}", "message":
                                             "REPLY fronted and offline", "idempotencyKey": str(uuid.uuid4())})
            done = await c.call("agent.wait", {"runId": acc["runId"], "timeoutMs": 180_000}, timeout=190)
            await c.close()
            owner = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
            totals = (await owner.call("usage.cost", {"days": 1, "agentId": "main"}))["totals"]
            await owner.close()
    if name == "opencode" and ".config/opencode/.gitignore" in str(done.get("error")):
        pytest.xfail("known, not the model gateway's: OpenCode 1.18 writes a .gitignore into its config folder, "
                     "read-only in a stranger's sandbox, until an owner's run has written it")
    assert done["status"] == "ok" and "fronted and offline" in done["reply"], done
    sent = [h.get(HEADER[name], "") for h in api.seen_headers if HEADER[name] in h]
    assert sent and all(v.endswith("test-key") for v in sent), sent  # the real key, added by the gateway
    assert not any("rcm-" in str(h) for h in api.seen_headers)  # the stand-in never left the gateway
    assert totals["input"] > 0 and totals["output"] > 0, totals  # the usage the fake stated, read at the wire
