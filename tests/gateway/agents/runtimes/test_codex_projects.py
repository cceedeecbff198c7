"""The real Codex CLI in a project folder that has its own ``AGENTS.md``, offline against the fake Responses API.

Codex reads its instructions from ``AGENTS.md`` in its working directory, so the gateway writes the system
prompt there for the run; in a project that file is the project's own. During the run Codex reads ours followed
by the project's rules; after it the project's file is back, byte for byte, and git sees nothing changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.agents.runtimes.flows import agent_gateway, ask, cli_workdir, fake_api
from tests.gateway.agents.runtimes.test_codex import user_env
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway_proc import GatewayProcess
from tests.support.gitrepo import git, make_repo
from tests.support.ws import operator

pytestmark = pytest.mark.slow
api = fake_api(FakeOpenAI)
KEY = "agent:main:codex-project"
THEIRS = "# Project rules\n\nNever touch prod.\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("codex-proj") / "tool", {"AGENTS.md": THEIRS})


@pytest.fixture(scope="module")
def gw(api: FakeOpenAI, repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    codex, d = cli_workdir(tmp_path_factory, "codex")
    env = user_env(d, api.url)
    agent = {"runtime": "codex", "command": [codex], "env": env,
             "projects": [{"name": "tool", "path": str(repo)}]}
    with agent_gateway(d, agent, loop_channel=False) as proc:
        yield proc


async def test_the_projects_agents_md_survives_a_codex_turn(gw: GatewayProcess, api: FakeOpenAI,
                                                            repo: Path) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        assert (await ask(c, "REPLY hello", KEY))["status"] == "ok"
        await c.call("sessions.project", {"sessionKey": KEY, "project": "tool"})
        before = len(api.requests)
        assert (await ask(c, "REPLY in the project", KEY))["status"] == "ok"
    finally:
        await c.close()
    sent = " ".join(str(r) for r in api.requests[before:])
    assert "remoteclaw" in sent and "Never touch prod." in sent  # our instructions, then the project's rules
    assert (repo / "AGENTS.md").read_text() == THEIRS
    assert git(repo, "status", "--porcelain", "--ignored") == ""
