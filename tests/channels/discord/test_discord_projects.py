"""Projects on Discord: ``/project`` switches a DM's conversation to a git project, a turn that edits a file ends
with the change's summary and the ``.diff`` file is uploaded to the same channel.

The whole gateway, discord.py against the loopback fake, the stand-in CLI's ``edit:<path>`` directive, real git.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.fake_discord import FakeDiscord, discord_gateway, module_fake, snowflake
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.gitrepo import make_repo

pytestmark = pytest.mark.slow


fake = module_fake()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("dproj") / "app", {"main.py": "print('hi')\nprint('bye')\n"})


@pytest.fixture(scope="module")
async def gw(fake: FakeDiscord, repo: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[GatewayProcess]:
    agent = {"id": "main", "command": [sys.executable, str(ROOT / "tests/support/fake_cli.py")],
             "projects": [{"name": "app", "path": str(repo), "worktrees": True}]}
    # the sender is the owner: a stranger's DM works in no project (#51)
    config = {"agents": {"list": [agent]}, "channels": {"discord": fake.config() | {"dmPolicy": "open"},
                                                        "ownerAllowFrom": ["discord:5550101"]}}
    async with discord_gateway(fake, tmp_path_factory.mktemp("discord-proj"), config) as proc:
        yield proc


async def test_a_turn_in_a_project_sends_its_diff_to_discord(gw: GatewayProcess, fake: FakeDiscord,
                                                             repo: Path) -> None:
    dm = snowflake()
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="/project app", author_id="5550101",
                                                               channel_id=dm))
    await fake.wait_posted(dm, "Now working in app", timeout=15)
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="edit:main.py please", author_id="5550101",
                                                               channel_id=dm))
    reply = await fake.wait_posted(dm, "echo: edit:main.py", timeout=15)
    assert reply.json["content"].endswith("📝 1 file changed, +1 \N{MINUS SIGN}1")

    def upload() -> tuple[str, bytes] | None:
        return next((f for r in fake.requests if r.path == f"/channels/{dm}/messages" for f in r.files
                     if f[0].endswith(".diff")), None)

    for _ in range(100):
        if upload() is not None:
            break
        await asyncio.sleep(0.1)
    found = upload()
    assert found is not None, "no .diff uploaded"
    name, data = found
    assert name.endswith("-1.diff")
    assert "-print('hi')\n+edited by the agent" in data.decode()
    assert (repo / "main.py").read_text() == "print('hi')\nprint('bye')\n"  # the worktree changed, not the repo
    await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content="/status", author_id="5550101",
                                                               channel_id=dm))
    status = await fake.wait_posted(dm, "Project: app (branch remoteclaw/", timeout=15)
    assert "Agent: main" in status.json["content"]
