"""Property-based fuzzing of ``/mcp`` on a real gateway process over real HTTP (hypothesis).

Random bodies (the same generator as the shim's stdio fuzz: garbage, non-requests, requests of both protocol
eras with good and bad ids and params), sent with a baseline token, with or without a session id, with odd
``accept``/``content-type``/``mcp-protocol-version`` headers now and then. The gateway must never answer 5xx,
a JSON answer must be well-formed JSON-RPC carrying the request's own id, and the gateway must serve normally
afterwards. ``REMOTECLAW_FUZZ_EXAMPLES`` sets the number of requests.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.gateway.mcp_http.test_remote_mcp import HEADERS, mcp_token
from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.mcp_fuzz import messages, well_formed

EXAMPLES = int(os.environ.get("REMOTECLAW_FUZZ_EXAMPLES", "200"))
ODD_HEADERS = {"accept": ["text/plain", "application/json", "*/*", ""],
               "content-type": ["text/plain", "application/json; charset=latin-1", ""],
               "mcp-protocol-version": ["2026-07-28", "2025-11-25", "1900-01-01", "x" * 300]}


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, httpx.Client, str, str]]:
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
    with GatewayProcess(tmp_path_factory.mktemp("fuzz-mcp") / "gw", config=config) as gw:
        token = mcp_token(gw, "--name", "fuzz", "--profile", "full")
        with httpx.Client(timeout=30) as client:
            auth = {**HEADERS, "authorization": f"Bearer {token}"}
            opened = client.post(f"http://127.0.0.1:{gw.port}/mcp", headers=auth, json={
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "fuzz", "version": "1"}}})
            assert opened.status_code == 200, opened.text
            yield gw, client, token, opened.headers["mcp-session-id"]


def _answers(response: httpx.Response) -> list[dict[str, Any]]:
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    if kind.startswith("application/json") and response.content:
        body = response.json()
        return body if isinstance(body, list) else [body]
    return []


def test_random_requests_never_break_mcp_over_http(endpoint: tuple[GatewayProcess, httpx.Client, str, str]) -> None:
    gw, client, token, session = endpoint
    url = f"http://127.0.0.1:{gw.port}/mcp"
    tools = [t["name"] for t in client.post(url, headers={**HEADERS, "authorization": f"Bearer {token}",
                                                          "mcp-session-id": session},
                                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
             ["result"]["tools"]]
    statuses: Counter[int] = Counter()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def run(data: st.DataObject) -> None:
        raw, expect = data.draw(messages(tools))
        headers = {**HEADERS, "authorization": f"Bearer {token}"}
        if data.draw(st.integers(0, 4)) < 4:  # mostly in the session; now and then none, or a wrong one
            headers["mcp-session-id"] = session if data.draw(st.integers(0, 4)) < 4 else "not-a-session"
        if data.draw(st.integers(0, 5)) == 5:
            name = data.draw(st.sampled_from(sorted(ODD_HEADERS)))
            headers[name] = data.draw(st.sampled_from(ODD_HEADERS[name]))
        response = client.post(url, headers=headers, content=raw)
        assert response.status_code < 500, (raw[:200], response.status_code, response.text[:300])
        statuses[response.status_code] += 1
        answers = _answers(response)
        for answer in answers:
            well_formed(answer)
        if expect is not None and response.status_code == 200 and answers:
            assert [a.get("id") for a in answers] == [expect], (raw[:200], answers)

    run()
    assert statuses[200] >= EXAMPLES // 3, statuses  # many got past the door and were answered
    health = client.post(url, headers={**HEADERS, "authorization": f"Bearer {token}", "mcp-session-id": session},
                         json={"jsonrpc": "2.0", "id": "after", "method": "tools/call",
                               "params": {"name": "agents_list", "arguments": {}}})
    assert health.status_code == 200 and not _answers(health)[0]["result"].get("isError"), health.text
    assert gw.proc is not None and gw.proc.poll() is None
