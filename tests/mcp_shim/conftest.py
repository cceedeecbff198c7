"""Fixtures for the MCP shim tests: real shim processes against a real gateway process."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim.shim import Shim, shim_env
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import RawClient, operator

ShimFactory = Callable[..., Any]


@pytest.fixture
async def start_shim(tmp_path: Path) -> AsyncIterator[ShimFactory]:
    """``await start_shim(gw, **env_options)`` → an initialized ``Shim``; all are closed afterwards."""
    started: list[Shim] = []

    async def start(gw: GatewayProcess | None, *, initialize: bool = True, **options: Any) -> Shim:
        shim = await Shim.start(shim_env(gw, tmp_path, **options))
        started.append(shim)
        if initialize:
            await shim.initialize()
        return shim

    yield start
    for shim in started:
        if shim.proc.returncode is None:
            await shim.close()
        assert not shim.junk, f"non-JSON on the shim's stdout: {shim.junk[:3]}"


@pytest.fixture(scope="module")
def agent_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A gateway whose default agent is a fake CLI that answers ``pong: <message>`` (no model, no network)."""
    fake = Path(__file__).with_name("fake_agent.py")
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, str(fake)]}]}}
    with GatewayProcess(tmp_path_factory.mktemp("gw"), config=config) as gw:
        yield gw


@pytest.fixture
async def watcher(agent_gateway: GatewayProcess) -> AsyncIterator[RawClient]:
    """An operator connection that sees the gateway's events (``hooks.tool`` among them)."""
    client = await operator(agent_gateway.url, agent_gateway.token or "")
    yield client
    await client.close()
