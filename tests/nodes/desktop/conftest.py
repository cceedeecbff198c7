"""Shared by the desktop tests: one real desktop session per module, and a desktop node paired with a gateway."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.nodes.test_node_host import pair
from tests.support.desktop import DesktopSession
from tests.support.gateway_proc import GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.ws import RawClient, operator


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopSession]:
    with DesktopSession(tmp_path_factory.mktemp("desktop")) as session:
        yield session


@contextlib.asynccontextmanager
async def desktop_node(gw: GatewayProcess, desktop: DesktopSession, state: Path, name: str
                       ) -> AsyncIterator[tuple[RawClient, NodeHostProcess, str]]:
    """Our node host inside ``desktop``, paired with ``gw`` and its tools read by the gateway; an operator."""
    admin = await operator(gw.url, gw.token or "")
    node = NodeHostProcess(state, gw.port, token=gw.token, name=name)
    node.extra_env = dict(desktop.env)
    try:
        with node:
            node_id = await pair(admin, node)
            await until_tools(admin)
            yield admin, node, node_id
    finally:
        await admin.close()


async def until_tools(admin: RawClient) -> dict[str, Any]:
    for _ in range(100):
        listed = await admin.call("desktop.tools.list", {})
        if listed["tools"]:
            return dict(listed)
        await asyncio.sleep(0.2)
    raise AssertionError("the gateway never read the desktop node's tools")


async def window_of(admin: RawClient, pid: int) -> dict[str, Any]:
    for _ in range(100):
        got = await admin.call("desktop.invoke", {"tool": "list_windows", "arguments": {"pid": pid}})
        windows = (got.get("structuredContent") or {}).get("windows") or []
        if windows:
            return dict(windows[0])
        await asyncio.sleep(0.2)
    raise AssertionError(f"zenity (pid {pid}) never showed a window")


async def entry_text(admin: RawClient, pid: int, window_id: int) -> tuple[str, str]:
    """The entry's text as the accessibility tree shows it, and the snapshot id for element tokens."""
    state = await admin.call("desktop.invoke", {"tool": "get_window_state",
                                                 "arguments": {"pid": pid, "window_id": window_id}})
    tree = state["structuredContent"]["tree_markdown"]
    m = re.search(r"\[0\] text \"([^\"]*)\"", tree)
    assert m, tree
    return m.group(1), state["structuredContent"]["snapshot_id"]
