"""Shared fixtures: a real gateway process per test module, and clients connected to it.

A module shapes its gateway with module-level constants instead of a fixture of its own:
``GATEWAY_CONFIG`` (written to ``remoteclaw.json``) and ``GATEWAY_ENV`` (extra environment). Tests
that need a gateway of their own (a restart, a kill) use ``fresh_gateway`` or ``GatewayProcess``.
Gateways are forked from a fork server that has imported the gateway (``tests/support/gateway_forkserver.py``);
``GATEWAY_EXEC = True`` in a module starts each of its gateways as a fresh interpreter instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support import gateway_proc, ws
from tests.support.gateway_proc import GatewayProcess
from tests.support.openclaw_schema import FrameLog, require_schema
from tests.support.ws import RawClient, operator

LONGEST_FIRST = ("tests/deploy/test_rootfs.py", "tests/bench/test_soak.py")
"""Files that take minutes (a Debian image built, a one-minute soak): started first, never left for the end."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long files first, then files with a ``slow`` test, then the rest, each in its own order: with
    ``--dist loadfile`` the workers take files in this order, and a long file taken last would be the
    suite's tail while the other workers sit idle."""
    root = Path(str(config.rootpath))
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}

    def rank(item: pytest.Item) -> int:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        return 0 if where in LONGEST_FIRST else 1 if item.path in slow_files else 2

    items.sort(key=rank)  # stable: each file's tests keep their order


@pytest.fixture(autouse=True)
def openclaw_frames(request: pytest.FixtureRequest) -> Iterator[FrameLog | None]:
    """With the ``openclaw_frames`` marker: every frame the test's clients receive is checked against
    OpenClaw's published schema (``tests/support/openclaw_schema.py``) when the test ends."""
    if request.node.get_closest_marker("openclaw_frames") is None:
        yield None
        return
    schema = require_schema()
    log = FrameLog()
    ws.FRAME_LOG = log
    try:
        yield log
    finally:
        ws.FRAME_LOG = None
    problems = log.problems(schema)
    if problems:
        pytest.fail(f"{len(problems)} frame(s) break OpenClaw's protocol schema:\n" + "\n".join(problems[:40]),
                    pytrace=False)


@pytest.fixture(scope="module", autouse=True)
def gateway_exec(request: pytest.FixtureRequest) -> Iterator[None]:
    """``GATEWAY_EXEC = True`` in a module: its gateways start as fresh interpreters, not forks (what a process
    sees of the gateway, such as its command line, is then the real one)."""
    gateway_proc.FORK_BY_DEFAULT = not getattr(request.module, "GATEWAY_EXEC", False)
    yield
    gateway_proc.FORK_BY_DEFAULT = True


@pytest.fixture(scope="module")
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway process shared by the tests of a module (fast); use ``fresh_gateway`` to own one."""
    config = getattr(request.module, "GATEWAY_CONFIG", None)
    env = getattr(request.module, "GATEWAY_ENV", None)
    with GatewayProcess(tmp_path_factory.mktemp("gw"), config=config, env=env) as gw:
        yield gw


@pytest.fixture
def fresh_gateway(tmp_path: Path) -> Iterator[GatewayProcess]:
    with GatewayProcess(tmp_path / "gw") as gw:
        yield gw


@pytest.fixture
async def admin(gateway: GatewayProcess) -> AsyncIterator[RawClient]:
    client = await operator(gateway.url, gateway.token or "")
    yield client
    await client.close()
