"""All four real agent CLIs work inside the sandbox: a project worktree, a shell command that changes a file (so
the turn has a diff), and a resumed session, each offline against its loopback fake model API.

The sandbox is on by default, so every runtime test runs sandboxed; this one puts the parts the sandbox could
break side by side: the worktree (its folder and the repository's ``.git`` shown read-write), the CLI's own
state between turns (its HOME, or Codex's session folder), and a command the agent runs itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agents.runtimes.flows import agent_gateway, ask, cli_workdir
from tests.gateway.agents.runtimes.test_claude import offline_env
from tests.gateway.agents.runtimes.test_codex import user_env as codex_env
from tests.gateway.agents.runtimes.test_gemini import user_env as gemini_env
from tests.gateway.agents.runtimes.test_opencode import user_home as opencode_home
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.gitrepo import git, make_repo
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
WRITE = "echo changed-in-the-sandbox > sandboxed.txt"


def _claude(d: Path, url: str) -> tuple[dict[str, Any], str]:
    agent = {"env": offline_env(url, d / "home"), "permissions": "bypass"}
    return agent, "CALL Bash " + json.dumps({"command": WRITE, "description": "write"})


def _codex(d: Path, url: str) -> tuple[dict[str, Any], str]:
    return {"env": codex_env(d, url), "permissions": "bypass"}, "CALL exec_command " + json.dumps({"cmd": WRITE})


def _gemini(d: Path, url: str) -> tuple[dict[str, Any], str]:
    return ({"env": gemini_env(d, url), "model": "gemini-2.5-flash", "permissions": "bypass"},
            "CALL run_shell_command " + json.dumps({"command": WRITE}))


def _opencode(d: Path, url: str) -> tuple[dict[str, Any], str]:
    opencode_home(d / "home", url)
    env = {"HOME": str(d / "home"), "OPENCODE_DISABLE_MODELS_FETCH": "1"}
    return ({"env": env, "model": "fake/fake-model", "permissions": "bypass"},
            "CALL bash " + json.dumps({"command": WRITE, "description": "write"}))


RUNTIMES: dict[str, tuple[type, Callable[[Path, str], tuple[dict[str, Any], str]]]] = {
    "claude": (FakeAnthropic, _claude), "codex": (FakeOpenAI, _codex), "gemini": (FakeGemini, _gemini),
    "opencode": (FakeOpenAI, _opencode)}


@pytest.fixture(params=sorted(RUNTIMES))
def runtime(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    fake_cls, _ = RUNTIMES[request.param]
    with fake_cls() as fake:
        yield request.param, fake


def requests_of(name: str, fake: Any) -> list[Any]:
    return fake.chat_requests if name == "opencode" else fake.requests


async def test_a_turn_in_a_worktree_changes_a_file_and_resumes(runtime: tuple[str, Any],
                                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    name, fake = runtime
    binary, d = cli_workdir(tmp_path_factory, name)
    repo = make_repo(d / "svc", {"app.py": "print('hi')\n"})
    extra, command = RUNTIMES[name][1](d, fake.url)
    agent = {"runtime": name, "command": [binary], **extra,
             "projects": [{"name": "svc", "path": str(repo), "worktrees": True}]}
    key = f"agent:main:sandboxed-{name}"
    with agent_gateway(d, agent, loop_channel=False) as gw:
        c = await operator(gw.url, gw.token or "")
        try:
            hello = await ask(c, "REPLY hello", key)
            assert hello["status"] == "ok", hello
            await c.call("sessions.project", {"sessionKey": key, "project": "svc"})
            done = await ask(c, command, key)
            assert done["status"] == "ok", done
            history = await c.call("chat.history", {"sessionKey": key})
            answer = [m for m in history["messages"] if m["role"] == "assistant"][-1]
            assert answer.get("project") == "svc" and "sandboxed.txt" in json.dumps(answer.get("diff")), answer
            tree = Path((await c.call("status", {"sessionKey": key}))["projectPath"])
            assert (tree / "sandboxed.txt").read_text().strip() == "changed-in-the-sandbox"
            before = len(requests_of(name, fake))
            assert (await ask(c, "REPLY once more", key))["status"] == "ok"
            assert "changed-in-the-sandbox" in json.dumps(requests_of(name, fake)[before:])  # the same session
        finally:
            await c.close()
    assert git(repo, "status", "--porcelain") == ""  # the worktree's change stayed in the worktree
