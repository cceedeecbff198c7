"""Projects and what changed: ``/project``, a git worktree per conversation, the turn's diff and ``/diff``.

The whole gateway as a process, its Telegram bot against the loopback fake Bot API, the stand-in CLI's
``edit:<path>`` directive editing files in its working directory, and real git repositories on disk.
Two Telegram users are two conversations (``dmScope: per-peer``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_telegram import FAKE_CLI, FakeTelegram, cli_runs, module_fake, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.gitrepo import git, make_repo
from tests.support.ws import operator

ADA, BEN = 111, 222

fake = module_fake()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with one commit (README.md, three lines)."""
    return make_repo(tmp_path_factory.mktemp("projects") / "web", {"README.md": "# web\nsecond\nthird\n"})


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain folder, not git."""
    path = tmp_path_factory.mktemp("notes")
    (path / "todo.txt").write_text("milk\n")
    return path


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram, repo: Path,
       notes: Path) -> Iterator[GatewayProcess]:
    agent = {"id": "main", "command": [sys.executable, FAKE_CLI],
             "projects": [{"name": "web", "path": str(repo), "worktrees": True},
                          {"name": "notes", "path": str(notes)}]}
    config = {"agents": {"list": [agent]}, "session": {"dmScope": "per-peer"}}
    # Ada and Ben are both the owner (two of the owner's chats): a stranger's DM works in no project (#51)
    with telegram_gateway(tmp_path_factory.mktemp("tg") / "gw", fake, dmPolicy="open", config=config,
                          channels={"ownerAllowFrom": [f"telegram:{ADA}", f"telegram:{BEN}"]}) as proc:
        yield proc


async def say(fake: FakeTelegram, user: int, text: str, answer: Any, timeout: float = 20.0) -> str:
    """Send ``text`` as ``user``; the text of the first new reply to them that satisfies ``answer``."""
    start = len(fake.calls)
    fake.user_message(chat_id=user, user_id=user, text=text)
    call = await fake.wait_call("sendMessage", lambda c: made_after(fake, c, start)
                                and str(c.params["chat_id"]) == str(user) and answer(c.params["text"]),
                                timeout=timeout)
    return str(call.params["text"])


def made_after(fake: FakeTelegram, call: Any, start: int) -> bool:
    """Whether ``call`` is one of the calls from number ``start`` on (by identity: equal calls may repeat)."""
    return any(call is c for c in fake.calls[start:])


async def document_after(fake: FakeTelegram, user: int, start: int) -> dict[str, Any]:
    """The next document sent to ``user`` after call number ``start``: ``{filename, data}``."""
    call = await fake.wait_call("sendDocument", lambda c: made_after(fake, c, start)
                                and str(c.params["chat_id"]) == str(user))
    return call.files["document"]


def worktrees(repo: Path) -> dict[str, str]:
    """``git worktree list``: branch -> path."""
    out: dict[str, str] = {}
    path = ""
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree "):]
        elif line.startswith("branch refs/heads/"):
            out[line[len("branch refs/heads/"):]] = path
    return out


async def test_project_lists_and_switches(gw: GatewayProcess, fake: FakeTelegram, repo: Path) -> None:
    await fake.wait_polling()
    listing = await say(fake, ADA, "/project", lambda t: t.startswith("Projects"))
    assert f"• web — {repo} (a worktree per conversation)" in listing
    assert "no project" in listing
    assert "There is no project 'nope'" in await say(fake, ADA, "/project nope", lambda t: "nope" in t)
    switched = await say(fake, ADA, "/project web", lambda t: t.startswith("📁"))
    assert "Now working in web" in switched
    assert "▶ web" in await say(fake, ADA, "/project", lambda t: t.startswith("Projects"))


async def test_two_conversations_work_in_their_own_worktrees(gw: GatewayProcess, fake: FakeTelegram,
                                                             repo: Path) -> None:
    await fake.wait_polling()
    await say(fake, ADA, "/project web", lambda t: t.startswith("📁"))
    await say(fake, BEN, "/project web", lambda t: t.startswith("📁"))
    start = len(fake.calls)
    reply = await say(fake, ADA, "edit:hello.txt make a file", lambda t: t.startswith("echo: edit:hello.txt"))
    assert reply.endswith("📝 1 file changed, +3 \N{MINUS SIGN}0"), reply
    doc = await document_after(fake, ADA, start)
    assert doc["filename"].endswith("-1.diff")
    text = doc["data"].decode()
    assert "+++ b/hello.txt" in text and "+line 1\n+line 2\n+line 3" in text

    await say(fake, BEN, "edit:README.md retitle it", lambda t: t.startswith("echo: edit:README.md"))
    trees = worktrees(repo)
    mine = [b for b in trees if b.startswith("remoteclaw/")]
    assert len(mine) == 2, trees
    ada_tree, ben_tree = (Path(trees[b]) for b in sorted(mine, key=lambda b: "111" not in b))
    assert ada_tree != ben_tree and ada_tree.parent == repo.parent / "web.worktrees"
    assert (ada_tree / "hello.txt").read_text() == "line 1\nline 2\nline 3\n"
    assert not (ben_tree / "hello.txt").exists()
    assert (ben_tree / "README.md").read_text().startswith("edited by the agent\n")
    assert (ada_tree / "README.md").read_text() == "# web\nsecond\nthird\n"
    assert not (repo / "hello.txt").exists()  # the project folder itself is untouched
    assert (repo / "README.md").read_text() == "# web\nsecond\nthird\n"
    # The CLI ran in the worktrees; its MCP config was there during the run, gone and git-excluded after.
    cwds = {r["cwd"] for r in cli_runs(gw.state_dir) if "edit:" in r["prompt"]}
    assert cwds == {str(ada_tree), str(ben_tree)}
    assert git(ada_tree, "status", "--porcelain") == "?? hello.txt\n"
    assert git(ben_tree, "status", "--porcelain") == " M README.md\n"
    assert not (ada_tree / ".remoteclaw").exists()
    assert "/.remoteclaw/" in (repo / ".git" / "info" / "exclude").read_text()

    # The next turn reuses the worktree; its diff is its own change only (hello.txt was already there).
    start = len(fake.calls)
    reply = await say(fake, ADA, "edit:hello.txt edit:new.txt again", lambda t: t.startswith("echo: edit:hello"))
    assert reply.endswith("📝 2 files changed, +4 \N{MINUS SIGN}1"), reply
    doc = await document_after(fake, ADA, start)
    assert doc["filename"].endswith("-2.diff")
    assert "-line 1\n+edited by the agent" in doc["data"].decode()
    assert len([b for b in worktrees(repo) if b.startswith("remoteclaw/")]) == 2

    # A turn that changes nothing says nothing about changes and sends no file.
    start = len(fake.calls)
    reply = await say(fake, ADA, "just talk", lambda t: t.startswith("echo: just talk"))
    assert "📝" not in reply and not [c for c in fake.calls[start:] if c.method == "sendDocument"]


async def test_status_and_diff_on_request(gw: GatewayProcess, fake: FakeTelegram, repo: Path) -> None:
    await fake.wait_polling()
    await say(fake, ADA, "/project web", lambda t: t.startswith("📁"))
    await say(fake, ADA, "edit:status.txt one more", lambda t: t.startswith("echo: edit:status.txt"))
    status = await say(fake, ADA, "/status", lambda t: t.startswith("Agent:"))
    assert "Project: web (branch remoteclaw/" in status
    start = len(fake.calls)
    assert "Last turn's diff" in await say(fake, ADA, "/diff", lambda t: "diff" in t)
    doc = await document_after(fake, ADA, start)
    assert "+++ b/status.txt" in doc["data"].decode()
    start = len(fake.calls)
    answer = await say(fake, ADA, "/diff all", lambda t: t.startswith("Uncommitted"))
    doc = await document_after(fake, ADA, start)
    assert doc["filename"].endswith("-uncommitted.diff")
    assert "+++ b/status.txt" in doc["data"].decode() and "+++ b/hello.txt" in doc["data"].decode()
    assert "files changed" in answer


async def test_a_worktree_can_be_removed_and_comes_back_on_its_branch(gw: GatewayProcess, fake: FakeTelegram,
                                                                      repo: Path) -> None:
    await fake.wait_polling()
    await say(fake, ADA, "/project web", lambda t: t.startswith("📁"))
    listed = await say(fake, ADA, "/project worktrees", lambda t: t.startswith("Worktrees of web"))
    assert listed.count("remoteclaw/") == 2
    refused = await say(fake, ADA, "/project remove", lambda t: "worktree" in t.lower())
    assert "stays" in refused  # uncommitted changes: git refuses
    tree = Path(next(p for b, p in worktrees(repo).items() if "111" in b))
    git(tree, "add", "-A")
    git(tree, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "agent work")
    assert "Removed" in await say(fake, ADA, "/project remove", lambda t: "Removed" in t)
    assert not (tree / "hello.txt").exists() and len(worktrees(repo)) == 2  # the repository's own and Ben's
    await say(fake, ADA, "edit:again.txt go on", lambda t: t.startswith("echo: edit:again.txt"))
    assert (tree / "hello.txt").exists() and (tree / "again.txt").exists()  # same branch, its commit kept


async def test_attachments_go_to_the_private_folder_of_the_project(gw: GatewayProcess, fake: FakeTelegram,
                                                                    repo: Path) -> None:
    await fake.wait_polling()
    await say(fake, ADA, "/project web", lambda t: t.startswith("📁"))
    fake.files["VOICE9"] = b"OggS fake opus bytes"
    fake.user_message(chat_id=ADA, user_id=ADA, caption="listen, show attachments",
                      voice={"file_id": "VOICE9", "file_unique_id": "vu9", "duration": 2, "mime_type": "audio/ogg",
                             "file_size": 20})
    call = await fake.wait_call("sendMessage", lambda c: c.params["text"].startswith("attachments:"))
    assert call.params["text"] == "attachments: vu9.oga=b'OggS fake opus bytes'"  # no diff line
    run = [r for r in cli_runs(gw.state_dir) if "show attachments" in r["prompt"]][-1]
    assert "[attachment: voice .remoteclaw/attachments/vu9.oga]" in run["prompt"]
    assert not (Path(run["cwd"]) / ".remoteclaw").exists()


async def test_a_plain_folder_project(gw: GatewayProcess, fake: FakeTelegram, notes: Path) -> None:
    await fake.wait_polling()
    await say(fake, BEN, "/project notes", lambda t: t.startswith("📁"))
    reply = await say(fake, BEN, "edit:todo.txt add eggs", lambda t: t.startswith("echo: edit:todo.txt"))
    assert "📝" not in reply  # not git: no diff
    assert (notes / "todo.txt").read_text() == "edited by the agent\n"
    assert not (notes / ".remoteclaw").exists()
    assert "Project: notes" in await say(fake, BEN, "/status", lambda t: t.startswith("Agent:"))
    assert "is not a git repository" in await say(fake, BEN, "/diff all", lambda t: "git" in t)
    back = await say(fake, BEN, "/project none", lambda t: t.startswith("📁"))
    assert "fresh private folder" in back
    await say(fake, BEN, "edit:x.txt scratch", lambda t: t.startswith("echo: edit:x.txt"))
    assert not (notes / "x.txt").exists()


@pytest.mark.openclaw_frames  # sessions.diff answers in OpenClaw's shape: every frame checked against its schema
async def test_sessions_diff_and_project_methods(gw: GatewayProcess, fake: FakeTelegram) -> None:
    ada, ben = "agent:main:direct:111", "agent:main:direct:222"
    c = await operator(gw.url, gw.token or "")
    try:
        now = (await c.req("sessions.diff", {"sessionKey": ada, "scope": "uncommitted"}))["payload"]
        paths = {f["path"]: f for f in now["files"]}
        assert paths["again.txt"]["untracked"] and paths["again.txt"]["status"] == "added"
        assert "+line 1" in paths["again.txt"]["patch"] and "hello.txt" not in paths  # committed already
        branch = (await c.req("sessions.diff", {"sessionKey": ada}))["payload"]
        assert branch["baseRef"] == "main" and branch["aheadCount"] == 1 and branch["branch"].startswith("remoteclaw/")
        assert branch["commits"][0]["subject"] == "agent work"
        assert {"hello.txt", "again.txt", "new.txt", "status.txt"} <= {f["path"] for f in branch["files"]}
        assert branch["additions"] == sum(f["additions"] for f in branch["files"])
        one = (await c.req("sessions.diff", {"sessionKey": ada, "scope": "commit",
                                              "commit": branch["commits"][0]["sha"]}))["payload"]
        assert "again.txt" not in {f["path"] for f in one["files"]} and "hello.txt" in {f["path"] for f in one["files"]}
        gone = (await c.req("sessions.diff", {"sessionKey": ada, "scope": "commit", "commit": "nope"}))["payload"]
        assert gone["unavailableReason"] == "unknown_commit"
        assert (await c.req("sessions.diff", {"sessionKey": ben}))["payload"]["unavailableReason"] == "not_git"
        unknown = await c.req("sessions.diff", {"sessionKey": "agent:main:direct:999"})
        assert unknown["payload"]["unavailableReason"] == "unknown_session"
        bad = await c.req("sessions.diff", {"sessionKey": ada, "scope": "commit"})
        assert not bad["ok"] and "commit" in bad["error"]["message"]

        refused = await c.req("sessions.project", {"sessionKey": ben, "project": "nope"})
        assert refused["error"]["details"]["field"] == "project" and "web, notes" in refused["error"]["message"]
        switched = (await c.req("sessions.project", {"sessionKey": ben, "project": "web"}))["payload"]
        assert switched["project"] == "web" and switched["projects"] == ["web", "notes"]
        status = (await c.req("status", {"sessionKey": ben}))["payload"]
        assert status["project"] == "web" and status["branch"].startswith("remoteclaw/")
        cleared = (await c.req("sessions.project", {"sessionKey": ben, "project": None}))["payload"]
        assert cleared["project"] is None
    finally:
        await c.close()


async def test_a_planted_private_folder_is_refused(gw: GatewayProcess, fake: FakeTelegram, notes: Path,
                                                   tmp_path: Path) -> None:
    """``.remoteclaw/`` gets the MCP config with the run's token: a symlink put there must not redirect it."""
    await fake.wait_polling()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (notes / ".remoteclaw").symlink_to(elsewhere)
    try:
        await say(fake, BEN, "/project notes", lambda t: t.startswith("📁"))
        refused = await say(fake, BEN, "hi there", lambda t: t.startswith("⚠️"))
        assert "not a directory owned by this user" in refused
        assert list(elsewhere.iterdir()) == []
    finally:
        (notes / ".remoteclaw").unlink()
    await say(fake, BEN, "/project none", lambda t: t.startswith("📁"))


async def test_a_failed_turn_still_shows_what_it_changed(gw: GatewayProcess, fake: FakeTelegram) -> None:
    await fake.wait_polling()
    await say(fake, ADA, "/project web", lambda t: t.startswith("📁"))
    start = len(fake.calls)
    failed = await say(fake, ADA, "edit:broken.txt then fail", lambda t: t.startswith("⚠️"))
    assert "model overloaded" in failed
    call = await fake.wait_call("sendDocument", lambda c: made_after(fake, c, start)
                                and str(c.params["chat_id"]) == str(ADA))
    assert call.params["caption"] == "📝 changed before it failed: 1 file changed, +3 \N{MINUS SIGN}0"
    assert "+++ b/broken.txt" in call.files["document"]["data"].decode()
