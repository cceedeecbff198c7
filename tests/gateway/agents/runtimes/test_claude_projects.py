"""The real Claude Code CLI in a project's git worktree, offline against the loopback fake Anthropic API.

What the stand-in CLI cannot show: Claude Code really runs in the conversation's worktree (the model is told
that folder), finds its MCP config under ``.remoteclaw/`` there, resumes its session in the same folder on the
next turn, and leaves the worktree clean (no MCP config with the run's token behind, nothing for git to see).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.agents.runtimes.flows import agent_gateway, ask, cli_workdir, fake_api
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.gateway_proc import GatewayProcess
from tests.support.gitrepo import git, make_repo
from tests.support.ws import operator

pytestmark = pytest.mark.slow
api = fake_api(FakeAnthropic)
KEY = "agent:main:projects"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("claude-proj") / "svc", {"app.py": "print('hi')\n"})


@pytest.fixture(scope="module")
def gw(api: FakeAnthropic, repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    claude, d = cli_workdir(tmp_path_factory, "claude")
    agent = {"runtime": "claude", "command": [claude], "env": offline_env(api.url, d / "home"),
             "projects": [{"name": "svc", "path": str(repo), "worktrees": True}]}
    with agent_gateway(d, agent, loop_channel=False) as proc:
        yield proc


async def test_claude_works_and_resumes_in_the_worktree(gw: GatewayProcess, api: FakeAnthropic, repo: Path) -> None:
    c = await operator(gw.url, gw.token or "")
    try:
        first = await ask(c, "REPLY hello", KEY)  # the session exists once it has a turn
        assert first["status"] == "ok"
        switched = await c.call("sessions.project", {"sessionKey": KEY, "project": "svc"})
        assert switched["project"] == "svc"
        before = len(api.requests)
        done = await ask(c, "REPLY in the worktree", KEY)
        assert done["status"] == "ok"
        status = await c.call("status", {"sessionKey": KEY})
        tree = Path(status["projectPath"])
        assert tree.parent == repo.parent / "svc.worktrees" and status["branch"].startswith("remoteclaw/")
        assert str(tree) in json.dumps(api.requests[before])  # Claude Code told the model where it works
        resumed = len(api.requests)
        assert (await ask(c, "REPLY once more", KEY))["status"] == "ok"
        assert len(api.requests[resumed]["messages"]) > 1  # the same Claude session, resumed in the worktree
        history = await c.call("chat.history", {"sessionKey": KEY})
        answers = [m for m in history["messages"] if m["role"] == "assistant"]
        assert answers[-1].get("project") == "svc" and "diff" not in answers[-1]  # nothing changed: no diff
    finally:
        await c.close()
    assert not (tree / ".remoteclaw").exists()
    assert git(tree, "status", "--porcelain", "--ignored") == ""  # nothing left behind, not even ignored
    assert git(repo, "status", "--porcelain") == ""
