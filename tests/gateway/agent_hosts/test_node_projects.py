"""Projects of an agent whose turns run on a node: ``/project``, a git worktree per conversation made by the node
in its own repository, the turn's diff made there and sent to the chat, ``/new``.

A real gateway (its Telegram bot against the loopback fake Bot API) and a real node host process with its own
HOME and state dir, lending the stand-in CLI (``edit:<path>`` writes a file in its working folder) and one folder
holding a real git repository. The stand-in logs each run in its HOME on the node (the one place of its own its
sandbox shows it whatever folder it works in): the assertions are on that log, the node's repository on disk and
what the chat got.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agent_hosts.test_node_turns import node_cli, remoteclaw, run_with_agents
from tests.nodes.test_node_host import pair
from tests.support import SUPPORT
from tests.support.fake_telegram import FakeTelegram, module_fake, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.gitrepo import git, make_repo
from tests.support.node_host import NodeHostProcess
from tests.support.ws import operator

pytestmark = [pytest.mark.timeout(180)]

FAKE_CLI = str(SUPPORT / "fake_cli.py")
NODE = "workbench"
ADA, BEN, CY = 111, 222, 333

fake = module_fake()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("node-projects")
    node_home = root / "node-home"
    code = node_home / "code"  # the folder the node lends: the repository and its worktrees beside it are in it
    repo = make_repo(code / "web", {"README.md": "# web\nsecond\nthird\n"})
    outside = make_repo(node_home / "private" / "secret", {"keys.txt": "not lent\n"})
    (code / "linked").symlink_to(outside)  # a link in the lent folder, leading out of it
    api = make_repo(code / "api", {"main.py": "print()\n"})
    (code / "api.worktrees").symlink_to(outside.parent)  # its worktrees would land outside the lent folder
    agent = {"id": "remote", "node": NODE,
             "projects": [{"name": "web", "path": str(repo), "worktrees": True},
                          {"name": "inplace", "path": str(repo)},
                          {"name": "outside", "path": str(outside)},
                          {"name": "linked", "path": str(code / "linked")},
                          {"name": "api", "path": str(api), "worktrees": True}]}
    config = {"agents": {"default": "remote", "list": [agent]}, "session": {"dmScope": "per-peer"}}
    owners = {"ownerAllowFrom": [f"telegram:{u}" for u in (ADA, BEN, CY)]}
    with telegram_gateway(root / "gw", fake, dmPolicy="open", config=config, channels=owners) as gw:
        yield {"gw": gw, "root": root, "home": node_home, "code": code, "repo": repo, "outside": outside}


@pytest.fixture(scope="module")
async def node(world: dict[str, Any]) -> AsyncIterator[NodeHostProcess]:
    gw: GatewayProcess = world["gw"]
    host = NodeHostProcess(world["root"] / "node-state", gw.port, token=gw.token, name=NODE)
    host.extra_env.update(HOME=str(world["home"]),
                          FAKE_CLI_LOG=str(host.state / "agent-homes" / "remote" / "cli.log"))
    host.state.mkdir(parents=True)
    assert node_cli(host, "agents", "set", "clis", f"claude={sys.executable} {FAKE_CLI}").returncode == 0
    assert node_cli(host, "agents", "set", "folders", str(world["code"])).returncode == 0
    admin = await operator(gw.url, gw.token or "")
    run_with_agents(host)
    try:
        await pair(admin, host)
        yield host
    finally:
        await admin.close()
        host.stop()


def runs(node: NodeHostProcess) -> list[dict[str, Any]]:
    """Every run of the stand-in CLI on the node, as it logged itself."""
    path = node.state / "agent-homes" / "remote" / "cli.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def last_run(node: NodeHostProcess, word: str) -> dict[str, Any]:
    return next(r for r in reversed(runs(node)) if word in r["prompt"])


async def say(fake: FakeTelegram, user: int, text: str, answer: Any, timeout: float = 40.0) -> str:
    """Send ``text`` as ``user``; the text of the first new reply to them that satisfies ``answer``."""
    start = len(fake.calls)
    fake.user_message(chat_id=user, user_id=user, text=text)
    call = await fake.wait_call("sendMessage", lambda c: any(c is m for m in fake.calls[start:])
                                and str(c.params["chat_id"]) == str(user) and answer(c.params["text"]),
                                timeout=timeout)
    return str(call.params["text"])


async def document_after(fake: FakeTelegram, user: int, start: int) -> dict[str, Any]:
    call = await fake.wait_call("sendDocument", lambda c: any(c is m for m in fake.calls[start:])
                                and str(c.params["chat_id"]) == str(user))
    return call.files["document"]


def exists(path: str) -> bool:
    return Path(path).exists()


def branch_in(tree: Path) -> str:
    return git(tree, "symbolic-ref", "--short", "HEAD").strip()


async def test_a_project_folder_the_node_does_not_lend_is_refused(world: dict[str, Any], node: NodeHostProcess,
                                                                 fake: FakeTelegram) -> None:
    await fake.wait_polling()
    listing = await say(fake, CY, "/project", lambda t: t.startswith("Projects"))
    assert "web" in listing and "outside" in listing
    refused = await say(fake, CY, "/project outside", lambda t: "outside" in t)
    assert refused.startswith("⚠️ Project outside cannot be used on node workbench"), refused
    assert f"{world['outside']} is not in a folder node {NODE} lends" in refused and str(world["code"]) in refused
    # a folder that is lent by name but leads out through a symlink: the node refuses it
    linked = await say(fake, CY, "/project linked", lambda t: "linked" in t)
    assert linked.startswith("⚠️ Project linked cannot be used") and "symlink" in linked, linked
    api = await say(fake, CY, "/project api", lambda t: "api" in t)
    assert api.startswith("⚠️ Project api cannot be used") and "the worktree" in api and "symlink" in api, api
    assert not list((world["outside"].parent).glob("*-*")), "no worktree made through the link"
    # placement says which project folder is not lent
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        placed = {a["agentId"]: a for a in (await c.call("node.agents"))["agents"]}
        assert placed["remote"]["placeable"], placed
        assert placed["remote"]["projectsNotLent"] == [{"name": "outside", "path": str(world["outside"])}]
        out = remoteclaw(gw, "nodes", "agents")
        assert out.returncode == 0, out.stderr
        assert f"project outside: {world['outside']} is not in a folder the node lends" in out.stdout
        # sessions.project refuses it as /project does, naming the field
        listed = [s["key"] for s in (await c.call("sessions.list", {}))["sessions"]]
        key = next(k for k in listed if k.endswith(str(CY)))
        refused_rpc = await c.req("sessions.project", {"sessionKey": key, "project": "outside"})
        assert refused_rpc["error"]["details"]["field"] == "project" and "lends" in refused_rpc["error"]["message"]
    finally:
        await c.close()
    # A session switched to it all the same (behind the gateway's back, as if the node lent it once and no longer
    # does): the node itself refuses the turn.
    with sqlite3.connect(gw.state_dir / "remoteclaw.db") as db:
        db.execute("UPDATE sessions SET project = 'outside' WHERE key = ?", (key,))
    before = len(runs(node))
    answer = await say(fake, CY, "edit:stolen.txt try", lambda t: "lends" in t)
    assert f"project outside: node {NODE} refused agent.project: the project folder {world['outside']} is not in " \
           "a folder this node lends" in answer, answer
    assert len(runs(node)) == before, "no CLI started"
    assert not (world["outside"] / "stolen.txt").exists()
    assert not (world["outside"].parent / "secret.worktrees").exists()


async def test_a_worktree_on_the_node_and_the_turns_diff_in_the_chat(world: dict[str, Any], node: NodeHostProcess,
                                                                      fake: FakeTelegram) -> None:
    await fake.wait_polling()
    repo: Path = world["repo"]
    switched = await say(fake, ADA, "/project web", lambda t: t.startswith("📁"))
    assert "web on node workbench" in switched and "worktree" in switched, switched
    start = len(fake.calls)
    reply = await say(fake, ADA, "edit:hello.txt make a file", lambda t: t.startswith("echo: edit:hello.txt"))
    assert reply.endswith("📝 1 file changed, +3 \N{MINUS SIGN}0"), reply
    doc = await document_after(fake, ADA, start)
    assert doc["filename"].endswith("-1.diff")
    text = doc["data"].decode()
    assert "+++ b/hello.txt" in text and "+line 1\n+line 2\n+line 3" in text

    seen = last_run(node, "edit:hello.txt")
    tree = Path(seen["cwd"])  # the CLI ran in the node's worktree, beside the node's repository
    assert tree.parent == repo.parent / "web.worktrees", seen["cwd"]
    assert seen["sandboxed"]
    branch = branch_in(tree)
    assert branch == f"remoteclaw/{tree.name}"
    assert git(repo, "branch", "--list", branch).strip(), "the branch is the node's repository's"
    assert (tree / "hello.txt").read_text() == "line 1\nline 2\nline 3\n"
    assert not (repo / "hello.txt").exists()  # the project folder itself is untouched
    assert git(tree, "status", "--porcelain") == "?? hello.txt\n"  # nothing of ours left in the checkout
    assert "/.remoteclaw/" in (repo / ".git" / "info" / "exclude").read_text()

    listing = await say(fake, ADA, "/project", lambda t: t.startswith("Projects"))
    assert f"Now: web in {tree} on node workbench on branch {branch}" in listing, listing
    assert "Last turn's diff" in await say(fake, ADA, "/diff", lambda t: "diff" in t)
    start = len(fake.calls)
    everything = await say(fake, ADA, "/diff all", lambda t: t.startswith("Uncommitted"))
    assert everything == "Uncommitted in web on node workbench: 1 file changed, +3 \N{MINUS SIGN}0", everything
    assert "+++ b/hello.txt" in (await document_after(fake, ADA, start))["data"].decode()
    trees = await say(fake, ADA, "/project worktrees", lambda t: t.startswith("Worktrees"))
    assert f"• {branch} — {tree}" in trees, trees

    # The next turn reuses the worktree; its diff is its own change only.
    start = len(fake.calls)
    reply = await say(fake, ADA, "edit:hello.txt edit:new.txt again", lambda t: t.startswith("echo: edit:hello"))
    assert reply.endswith("📝 2 files changed, +4 \N{MINUS SIGN}1"), reply
    doc = await document_after(fake, ADA, start)
    assert doc["filename"].endswith("-2.diff") and "-line 1\n+edited by the agent" in doc["data"].decode()
    assert Path(last_run(node, "edit:new.txt")["cwd"]) == tree

    # sessions.diff (the web chat's and OpenClaw's clients' view) is answered by the node, in its worktree
    gw: GatewayProcess = world["gw"]
    c = await operator(gw.url, gw.token or "", scopes=["operator.admin"])
    try:
        key = next(r["key"] for r in (await c.call("sessions.list", {}))["sessions"] if str(ADA) in r["key"])
        everything = await c.call("sessions.diff", {"sessionKey": key})
        assert everything["root"] == str(tree) and everything["node"] == NODE, everything
        assert everything["branch"] == branch and everything["baseRef"] == branch_in(repo), everything
        assert sorted(f["path"] for f in everything["files"]) == ["hello.txt", "new.txt"], everything["files"]
        assert all(f["untracked"] for f in everything["files"]) and "+edited by the agent" in json.dumps(everything)
        git(tree, "add", "hello.txt")
        git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the agent's file")
        sha = git(tree, "rev-parse", "HEAD").strip()
        committed = await c.call("sessions.diff", {"sessionKey": key})
        assert committed["aheadCount"] == 1 and committed["commits"] == [{"sha": sha, "subject": "the agent's file"}]
        assert sorted(f["path"] for f in committed["files"]) == ["hello.txt", "new.txt"]  # since the branch left
        open_work = await c.call("sessions.diff", {"sessionKey": key, "scope": "uncommitted"})
        assert [f["path"] for f in open_work["files"]] == ["new.txt"], open_work
        one = await c.call("sessions.diff", {"sessionKey": key, "scope": "commit", "commit": sha})
        assert [f["path"] for f in one["files"]] == ["hello.txt"] and one["additions"] == 3, one
        unknown = await c.call("sessions.diff", {"sessionKey": key, "scope": "commit", "commit": "no-such-ref"})
        assert unknown["unavailableReason"] == "unknown_commit", unknown
        # the web chat's header (status) shows the node's worktree and branch, not the project's folder here
        st = await c.call("status", {"sessionKey": key})
        assert (st["node"], st["project"], st["projectPath"], st["branch"]) == (NODE, "web", str(tree), branch), st
        # /handoff names the node's machine, its worktree, its CLI and the HOME the node gives the agent
        desk = await c.call("sessions.handoff", {"key": key})
        assert desk["node"] == NODE and desk["cwd"] == str(tree), desk
        home = node.state / "agent-homes" / "remote"
        assert f"cd {tree}" in desk["command"] and f"HOME={home} {sys.executable} {FAKE_CLI}" in desk["command"]
        assert desk["command"].endswith(f"--resume {desk['sessionId']}"), desk
    finally:
        await c.close()
    git(tree, "reset", "-q", "--soft", "HEAD~1")  # the worktree as the turns left it, for the tests after this one
    git(tree, "reset", "-q", "hello.txt")
    shown = await say(fake, ADA, "/status", lambda t: t.startswith("Agent:"))
    assert f"Project: web on node workbench (branch {branch})" in shown, shown
    told = await say(fake, ADA, "/handoff", lambda t: t.startswith("Continue"))
    assert told.startswith("Continue this conversation on node workbench (claude, session "), told
    assert f"cd {tree}" in told


async def test_a_project_without_worktrees_works_in_the_nodes_folder(world: dict[str, Any], node: NodeHostProcess,
                                                                     fake: FakeTelegram) -> None:
    await fake.wait_polling()
    repo: Path = world["repo"]
    await say(fake, CY, "/project inplace", lambda t: t.startswith("📁"))
    reply = await say(fake, CY, "edit:README.md retitle", lambda t: t.startswith("echo: edit:README.md"))
    assert reply.endswith("📝 1 file changed, +1 \N{MINUS SIGN}1"), reply
    assert Path(last_run(node, "edit:README.md retitle")["cwd"]) == repo
    assert (repo / "README.md").read_text().startswith("edited by the agent\n")
    git(repo, "checkout", "--", "README.md")
    # the repository's config and hooks stay read-only in the node's sandbox: what git would run is not the turn's
    config = (repo / ".git" / "config").read_text()
    refused = await say(fake, CY, "edit:.git/config plant a filter", lambda t: "Read-only file system" in t)
    assert "⚠️" in refused and (repo / ".git" / "config").read_text() == config


async def test_new_and_another_conversation_on_the_node(world: dict[str, Any], node: NodeHostProcess,
                                                        fake: FakeTelegram) -> None:
    await fake.wait_polling()
    repo: Path = world["repo"]
    await say(fake, ADA, "/project web", lambda t: t.startswith("📁"))
    await say(fake, ADA, "edit:one.txt first", lambda t: t.startswith("echo: edit:one.txt"))
    first = last_run(node, "edit:one.txt")
    # /new: a fresh agent conversation (nothing resumed), in the conversation's worktree as locally
    assert "New conversation" in await say(fake, ADA, "/new", lambda t: "conversation" in t)
    await say(fake, ADA, "edit:two.txt after new", lambda t: t.startswith("echo: edit:two.txt"))
    after = last_run(node, "edit:two.txt")
    assert "--resume" not in after["argv"], after["argv"]
    assert after["cwd"] == first["cwd"]

    # Another conversation gets a worktree of its own, on its own branch, made by the node.
    await say(fake, BEN, "/project web", lambda t: t.startswith("📁"))
    await say(fake, BEN, "edit:ben.txt mine", lambda t: t.startswith("echo: edit:ben.txt"))
    ben = Path(last_run(node, "edit:ben.txt")["cwd"])
    assert ben != Path(first["cwd"]) and ben.parent == repo.parent / "web.worktrees"
    assert branch_in(ben) != branch_in(Path(first["cwd"])) and git(repo, "branch", "--list", branch_in(ben)).strip()
    assert (ben / "ben.txt").exists() and not (ben / "one.txt").exists()

    # No project: a private folder on the node, fresh for every turn and for the new conversation.
    await say(fake, BEN, "/project none", lambda t: t.startswith("📁"))
    await say(fake, BEN, "edit:scratch.txt private", lambda t: t.startswith("echo: edit:scratch.txt"))
    private = last_run(node, "edit:scratch.txt")
    assert Path(private["cwd"]).parent == node.state / "agent-runs"
    await say(fake, BEN, "/new", lambda t: "conversation" in t)
    await say(fake, BEN, "look around", lambda t: t.startswith("echo: look around"))
    fresh = last_run(node, "look around")
    assert "scratch.txt" not in fresh["files"] and "--resume" not in fresh["argv"]
    assert not exists(private["cwd"]), "the turn's private folder was removed after it"


async def test_a_worktree_on_the_node_is_removed_there_and_comes_back(world: dict[str, Any], node: NodeHostProcess,
                                                                      fake: FakeTelegram) -> None:
    await fake.wait_polling()
    repo: Path = world["repo"]
    await say(fake, BEN, "/project web", lambda t: t.startswith("📁"))
    await say(fake, BEN, "edit:keep.txt work", lambda t: t.startswith("echo: edit:keep.txt"))
    tree = Path(last_run(node, "edit:keep.txt")["cwd"])
    branch = branch_in(tree)
    refused = await say(fake, BEN, "/project remove", lambda t: "worktree" in t.lower())
    assert refused.startswith("⚠️ The worktree stays"), refused  # uncommitted changes: git on the node refuses
    git(tree, "add", "-A")
    git(tree, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "agent work")
    removed = await say(fake, BEN, "/project remove", lambda t: "Removed" in t)
    assert f"Removed {tree} on node workbench" in removed, removed
    assert not exists(str(tree)) and git(repo, "branch", "--list", branch).strip()
    await say(fake, BEN, "edit:more.txt again", lambda t: t.startswith("echo: edit:more.txt"))
    assert Path(last_run(node, "edit:more.txt")["cwd"]) == tree and branch_in(tree) == branch
    assert (tree / "keep.txt").exists()  # checked out again on its branch, with its commit
