"""The agent executor: a queued run -> the agent's CLI -> events and transcript -> the reply delivered.

Installed as the run queue's executor, so every run (from a channel, ``agent``, ``chat.send``, a
sub-agent or cron) goes through the same steps:

0. a turn of an agent whose daily budget (``maxCostPerDay``) is spent is refused before anything starts;
1. a fresh workspace (with the message's downloaded attachments in ``attachments/``) and side-effects
   file, the ``REMOTECLAW_*`` context and a run token for the MCP shim (``context``);
2. the agent's CLI through its runtime adapter, resuming the session's CLI session when there is one;
3. each event broadcast as ``agent``/``chat`` events and written to the transcript (``stream``);
4. usage (the session's totals, and the turn's tokens and cost in ``turn_usage``) and the new CLI session
   id saved; workspace, side-effects file and token removed;
5. for channel runs, the reply delivered through the gateway's ``ChatPlatforms``: reply tags applied,
   ``NO_REPLY`` honoured, and skipped when a message tool already sent the same text to the same chat.
   A failed run tells the user why in one line.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from gateway.agents import outbox
from gateway.agents.context import context_env, is_owner_run, issue_run_token, prompt_for
from gateway.agents.invocation import Desk, cli_argv
from gateway.agents.reply import clean_reply, is_duplicate, one_line
from gateway.agents.runtimes import McpServer, RunSpec, runtime_for
from gateway.agents.runtimes.base import ASKING_MODES, Approve, Fronted, Runtime
from gateway.agents.runtimes.driver import TurnResult, run_turn
from gateway.agents.runtimes.process import StdinFeed
from gateway.agents.runtimes.prompt import build_system_prompt
from gateway.agents.strangers import strangers_conversation
from gateway.agents.stream import RunStream
from gateway.agents.workspace import (
    ATTACHMENTS_DIR,
    copy_attachments,
    own_folder,
    private_dir,
    read_effects,
    remove_own,
)
from gateway.composition.ports import (
    AGENT_HOSTS,
    DESKTOP_TOOLS,
    MODEL_GATEWAY,
    PLUGIN_TOOLS,
    RUN_WATCHERS,
    TOOL_APPROVALS,
    VOICE,
    Voice,
)
from gateway.projects.diffs import Diff, diff_trees, save_diff, snapshot
from gateway.projects.handoff import DeskAway
from gateway.projects.workdir import PRIVATE_DIR, GitError, Workdir, resolve_workdir, shared_git_dir
from gateway.protocol import InvalidRequest, RpcError
from gateway.runs import Origin, Run, RunOutcome
from gateway.runs.steering import effective_mode
from gateway.sandbox import RunConfinement, SandboxRefused
from gateway.sessions.service import parse_key
from gateway.sessions.store import SessionRepo
from gateway.store import StoreError
from gateway.usage.chat import budget_refusal, turn_facts
from gateway.usage.store import UsageRepo

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy.ext.asyncio import AsyncSession

    from gateway.agents.tokens import RunTokens
    from gateway.composition.callable_types import Broadcast
    from gateway.composition.services import Services
    from gateway.config import AgentConfig, ConfigStore, ProjectConfig
    from gateway.hooks.runner import HookRunner
    from gateway.people.service import PeopleService, PersonView
    from gateway.platforms.interface import ChatPlatforms, ProgressSink
    from gateway.runs import RunQueue
    from gateway.sandbox import Sandbox
    from gateway.sessions.service import SessionsService
    from gateway.store import Database

__all__ = ["AgentExecutor"]

log = structlog.get_logger("gateway.agents")

SHARED_TOKEN_SLACK_S = 600
"""How much longer than the turn's timeout a node turn's shared token may count, should its end not be heard."""
DIFF_MARK = "\N{MEMO}"  # the reply's last line after a turn that changed files: "📝 2 files changed, +3 -1"
MAX_PAGE_DIFF = 200_000  # characters of a turn's diff kept in the transcript for the web chat
_ATTACHMENT_NOTE = re.compile(rf"(\[attachment: \w+ ){ATTACHMENTS_DIR}/")


@dataclass(slots=True)
class _Turn:
    """One turn between its steps (``AgentExecutor.execute``): what ``_prepare`` settled, and what ``_run`` started
    that ``_end`` gives back."""

    run: Run
    agent: AgentConfig
    runtime: Runtime
    resume_id: str | None
    workdir: Workdir | None
    workspace: Path
    """Where the CLI works: the session's project folder or worktree, else its private folder."""
    scratch: Path
    """Our files for this turn (attachments, the MCP config): the private folder itself, or ``.remoteclaw/`` in a
    project; removed at the end."""
    fx_path: Path
    tools_path: Path
    cli_state: Path
    before: str | None
    """The work tree's snapshot before the turn (a git project), for its diff."""
    confinement: RunConfinement
    token: str
    started: float
    person_id: str | None = None
    """Whose session the turn is in (``gateway.people``): their usage and budget."""
    models: Any = None
    """The model gateway's stand-in for this run and what its CLI is given (``gateway.credentials``), or None."""
    model_drop: tuple[str, ...] = ()
    """The agent's ``env`` names that hold real credentials (never given to the run when fronted)."""
    progress: ProgressSink | None = None
    stream: RunStream | None = None
    typing: asyncio.Task[None] | None = None
    node: Any = None
    fallback: bool = False
    """Taken by an agent's ``nodeFallback`` while its node is away: its CLI session is not the session's."""
    """The node that runs this turn (``gateway.agent_hosts.remote.NodeProcess``), or None: here."""
    node_lost: str | None = None
    """The node went away: why (its messages wait for it, ``gateway.agent_hosts.parked``)."""


def _drop_scratch(workspace: Path, scratch: Path) -> None:
    """Our files of a turn gone: the throw-away workspace, or ``.remoteclaw/`` in a project, removed through no
    link the run left there (a link to a folder it cannot see is removed itself, its target untouched)."""
    if scratch == workspace:
        shutil.rmtree(workspace, ignore_errors=True)
    else:
        remove_own(workspace, PRIVATE_DIR)


def _talks_over_stdin(agent: AgentConfig, runtime: Runtime) -> bool:
    """Whether a turn writes to its CLI's stdin while it runs (a conversation over stdio: ACP, Codex's app-server,
    Gemini's ``--acp``), which a node carries with ``agent.input``. Steering does too, but a node without it just
    queues the message."""
    return runtime.self_driven or (agent.permissions in ASKING_MODES and runtime.name in ("codex", "gemini"))


def _steer_into(feed: StdinFeed, runtime: Runtime) -> Callable[[str], bool]:
    """The run's ``steer``: hand one more user message to its running CLI (False once its stdin is closed)."""
    return lambda text: feed.send(runtime.user_message(text))


class AgentExecutor:
    """Runs agent turns for the run queue and delivers their results to chats."""

    def __init__(self, *, db: Database, config: ConfigStore, state_dir: Path, replica_id: str,
                 sessions: SessionsService, people: PeopleService, runs: RunQueue, run_tokens: RunTokens,
                 hooks: HookRunner, services: Services, broadcast: Broadcast,
                 platforms: Callable[[], ChatPlatforms | None], listen: Callable[[], tuple[str, int]],
                 sandbox: Sandbox, runs_dir: Path) -> None:
        self._db = db
        self._config = config
        self._state_dir = state_dir
        self._replica_id = replica_id
        """Whose outbox rows this process's replies are (``gateway.agents.outbox``)."""
        self._sessions = sessions
        self._people = people
        """Whose session a turn is in: their budget, and the reach of their run's tools."""
        self._runs = runs
        self._run_tokens = run_tokens
        self._hooks = hooks
        self._services = services
        """The capabilities' services: voice, approvals, plugin tools (``gateway.composition.ports``), when they
        started."""
        self._broadcast = broadcast
        self._platforms = platforms
        """The chat platforms, once attached (they start after the executor)."""
        self._listen = listen
        """Where the gateway listens (the shim's address), known once the server is bound."""
        self._sandbox = sandbox
        self._notes: dict[str, ProgressSink] = {}
        """The progress note of each session's running turn (told when the run waits for its person)."""
        self.runs_dir = runs_dir
        """One folder per gateway (``workspace.runs_folder``): the runs' workspaces and hand-back files."""
        self.root = runs_dir.parent
        self._diff_files: dict[str, Path] = {}  # run id -> its turn's .diff, until after_run sends it

    # -- while a turn runs ---------------------------------------------------------------------

    async def typing(self, origin: Origin) -> float | None:
        """Show the typing indicator once; returns how long the platform keeps showing it."""
        platforms = self._platforms()
        if platforms is None:
            return None
        try:
            return await platforms.typing(origin)
        except Exception:
            log.debug("typing indicator failed", channel=origin.channel)
            return None

    async def _keep_typing(self, origin: Origin) -> None:
        """Renew the indicator just before it fades, for as long as the turn runs (cancelled at its end)."""
        while True:
            lasts = await self.typing(origin)
            if lasts is None:  # no indicator on this channel, or it failed: stop trying for this turn
                return
            await asyncio.sleep(lasts * 0.8)

    def waiting(self, session_key: str, on: bool) -> None:
        """The run of ``session_key`` waits for its person, or no longer: its progress note says so."""
        note = self._notes.get(session_key)
        if note is not None:
            note.waiting(on)

    def _progress_note(self, run: Run) -> ProgressSink | None:
        """A progress note for a channel turn whose channel can edit and delete messages, if enabled."""
        origin = run.last.origin
        platforms = self._platforms()
        if origin is None or not run.last.deliver or platforms is None or not self._config.config.messages.progress:
            return None
        try:
            return platforms.progress_note(origin)
        except Exception:
            return None

    async def _idle_expired(self, key: str) -> bool:
        """Whether ``session.idleMinutes`` have passed since the session's last turn ended."""
        idle = self._config.config.session.idleMinutes
        if not idle:
            return False
        async with self._db.session() as s:
            last = await SessionRepo.last_run_end(s, key)
        if last is None:
            return False
        if last.tzinfo is None:  # SQLite hands back naive UTC
            last = last.replace(tzinfo=UTC)
        return (datetime.now(UTC) - last).total_seconds() > idle * 60

    # -- running -------------------------------------------------------------------------------

    async def handoff_place(self, session_key: str) -> Desk:
        """Where the session's turns run (its project folder or worktree, else the private path the executor
        uses), its state dir, and the sandbox HOME of its own its CLI filed the conversation in (someone else's
        session): what ``/handoff`` needs to resume the CLI's session by hand. On a node: its paths there."""
        agent_id = parse_key(session_key)[0]
        agent = self._sessions.agent(agent_id, field="sessionKey")
        row = await self._sessions.get(session_key)
        project = row.project if row is not None else None
        if agent.node is not None:
            return await self._node_desk(agent, project, session_key)
        workdir = await resolve_workdir(agent, project, session_key)
        private = self.workspace_for(session_key)
        home = await asyncio.to_thread(self._sandbox.session_home, agent_id, session_key)
        return Desk(workdir.path if workdir is not None else private, self._state_dir / "runtimes" / private.name,
                    home)

    async def _node_desk(self, agent: AgentConfig, project: str | None, session_key: str) -> Desk:
        """A node turn's places on its node, as the node described them: the project's folder or the session's
        worktree there (the node makes it, as the next turn would), the lent workspace, or the session's private
        folder; the node's CLI for the runtime, and the HOME the node gives the agent (its own login's, when the
        node's owner runs turns unsandboxed with the node's logins)."""
        hosts = self._services.find(AGENT_HOSTS)
        if hosts is None:
            raise DeskAway(f"agent {agent.id} runs on node {agent.node}, but this gateway has no node service")
        host, why, _kept = await hosts.try_place(agent)
        if host is None:
            raise DeskAway(why)
        chosen = agent.project(project)
        workspace: Path | str | None = agent.workspace
        if chosen is not None:
            try:
                workspace = (await hosts.workdir(host.node_id, chosen, session_key, create=True)).path
            except RpcError as exc:
                raise DeskAway(f"node {host.name}: {exc.message}") from None
        place = hosts.NodePlace.of(host, session_key=session_key, run_id="handoff", workspace=workspace)
        facts = host.facts
        own_home = facts.get("sandbox") == "off" and facts.get("credentials") == "own"
        home = None if own_home else Path(str(facts.get("homesDir"))) / agent.id
        argv = (facts.get("clis") or {}).get(agent.runtime)
        return Desk(place.workspace, place.cli_state, home, list(argv) if argv else None, host.name)

    def workspace_for(self, session_key: str) -> Path:
        """A stable path per session (removed after each run): CLIs file their resumable sessions by cwd."""
        return self.runs_dir / hashlib.sha256(session_key.encode()).hexdigest()[:20]

    async def execute(self, run: Run) -> RunOutcome:
        """One turn, in four steps: prepare its place and sandbox, write what the CLI is started with, run it, record
        the answer. What a turn took (its token, files, live note) is given back whatever happens once it exists."""
        turn = await self._prepare(run)
        if isinstance(turn, RunOutcome):
            return turn
        try:  # from the moment the token exists it must be revoked, whatever happens next
            spec = await self._spec(turn)
            res = await self._run(turn, spec)
        finally:
            used = await self._end(turn)
        if used is not None:  # what the model API stated at the wire: the turn's usage, and a budget's stop
            res = self._wire_usage(res, used)
        # The answer exists now, outside the database: a database restart delays writing it, never drops it.
        reply = await self._db.persist(lambda s: self._record(s, turn, res), what="the agent's answer")
        self._hooks.fire("agent_end", {"sessionKey": run.session_key, "agentId": run.agent_id, "runId": run.id,
                                    "ok": res.ok, "reply": res.reply if res.ok else None, "error": res.error,
                                    "durationMs": round((time.monotonic() - turn.started) * 1000)})
        if turn.node_lost is not None:
            return await self._keep_for_node(run, turn.agent, turn.node_lost, mid_turn=True)
        if not res.ok:
            return RunOutcome(status="error", error=res.error or "the agent failed")
        return RunOutcome(status="ok", reply=reply)

    async def _keep_for_node(self, run: Run, agent: AgentConfig, why: str, *, mid_turn: bool) -> RunOutcome:
        """The turn's node is away: the chat hears it in one line, and the messages run when the node is back
        (kept in the database; a turn cut off mid-turn only when running it again is safe)."""
        hosts = self._services.find(AGENT_HOSTS)
        assert agent.node is not None and hosts is not None
        line = await hosts.kept_for(agent.node, run, why, mid_turn=mid_turn)
        log.info("turn's node is away", session_key=run.session_key, node=agent.node, why=why, mid_turn=mid_turn)
        return RunOutcome(status="error", error=line)

    async def _prepare(self, run: Run, fallback_for: AgentConfig | None = None) -> _Turn | RunOutcome:
        """The agent and its runtime, the budget check, the conversation to resume, the turn's folder (private, or
        the session's project) with its attachments and a snapshot for the diff, the sandbox, and the run token; or
        the outcome of a turn refused before any process starts. ``fallback_for``: the agent whose node is away,
        whose ``nodeFallback`` takes this turn."""
        agent = self._sessions.agent(run.agent_id if fallback_for is None else fallback_for.nodeFallback,
                                     field="sessionKey")
        try:
            runtime = runtime_for(agent)
        except ValueError as exc:  # e.g. runtime acp with neither a preset nor a command
            return RunOutcome(status="error", error=str(exc))
        run.answer_facts = {"agentId": agent.id, "runtime": runtime.name, "cli": cli_argv(agent)[0]}
        if fallback_for is not None:  # said with the answer: the web chat shows which agent took it
            run.answer_facts["fallbackFor"] = {"agentId": fallback_for.id, "node": fallback_for.node}
        if agent.model:
            run.answer_facts["model"] = agent.model
        refused = await budget_refusal(self._db, agent)
        if refused is not None:  # before any process starts: a spent budget costs nothing more
            log.info("turn refused: daily budget reached", session_key=run.session_key, agent_id=agent.id)
            return RunOutcome(status="error", error=refused)
        row = await self._sessions.get(run.session_key)
        person = await self._person(row.person_id if row is not None else None)
        if person is not None:
            refused = await self._people.budget_refusal(person.id)
            if refused is not None:
                log.info("turn refused: the person's daily budget is spent", session_key=run.session_key,
                         person=person.id)
                return RunOutcome(status="error", error=refused)
        project = agent.project(row.project if row is not None else None)
        strangers = strangers_conversation(is_owner=run.is_owner, person_id=person.id if person is not None else None,
                                           chat_type=row.chat_type if row is not None else None)
        if project is not None and (strangers or not self._people.may_work_in(person, project.people,
                                                                              is_owner=is_owner_run(run))):
            log.info("turn refused: the project is not open to the session's person", session_key=run.session_key,
                     project=project.name, person=person.id if person is not None else None)
            return RunOutcome(status="error", error=f"project {project.name} is not open to this conversation "
                                                    "(projects[].people): switch with /project none, or ask the owner")
        resume_id = row.cli_session(runtime.name) if row is not None and fallback_for is None else None
        if resume_id and await self._idle_expired(run.session_key):
            log.info("session idle: starting a fresh conversation", session_key=run.session_key)
            resume_id = None
        if agent.node is not None:  # placed on a node: its turns run there, never here
            return await self._prepare_on_node(run, agent, runtime, resume_id, person, project,
                                               fallback=fallback_for is None)
        try:
            workdir = await resolve_workdir(agent, row.project if row is not None else None, run.session_key)
        except (GitError, OSError) as exc:
            return RunOutcome(status="error", error=f"the project's folder could not be prepared: {exc}")
        workspace = workdir.path if workdir is not None else self.workspace_for(run.session_key)
        # Our own files in a project (attachments) go in its git-excluded .remoteclaw/, removed after the run.
        scratch = workspace / PRIVATE_DIR if workdir is not None else workspace
        fx_path = self.runs_dir / f"{run.id}.side-effects.ndjson"
        private_dir(self.root)
        private_dir(self.runs_dir)
        if workdir is None:
            shutil.rmtree(workspace, ignore_errors=True)
            workspace.mkdir(mode=0o700)
        else:
            run.answer_facts["project"] = workdir.project
            if workdir.branch:
                run.answer_facts["branch"] = workdir.branch
            own_folder(workspace, PRIVATE_DIR)  # .remoteclaw/ gets the MCP config with the run's token: 0700, no link
        if any(req.files for req in run.requests):
            dest = ATTACHMENTS_DIR if workdir is None else f"{PRIVATE_DIR}/{ATTACHMENTS_DIR}"
            await asyncio.to_thread(copy_attachments, run, workspace, dest)
        before = await self._snapshot(workdir)
        tools_path = self.runs_dir / f"{run.id}.plugin-tools.json"
        cli_state = self._state_dir / "runtimes" / self.workspace_for(run.session_key).name
        models = self._services.find(MODEL_GATEWAY)
        plan = await asyncio.to_thread(models.plan, agent, runtime) if models is not None and models.enabled \
            else None  # it reads the CLI's config and login files: not on the loop
        refused = models.refusal(plan, agent, owner=is_owner_run(run)) if models is not None and (
            plan is None or plan.unfronted) else None
        if refused is None and plan is not None and plan.unfronted and agent.credentialsMode == "shared" \
                and not is_owner_run(run):
            log.warning("a run holds the owner's model credentials (credentialsMode: shared)", agent_id=agent.id,
                        session_key=run.session_key, why=plan.unfronted)
        fronted = plan if plan is not None and not plan.unfronted else None
        if refused is not None:
            _drop_scratch(workspace, scratch)
            log.warning("run refused: its credentials cannot be fronted", session_key=run.session_key, why=refused)
            return RunOutcome(status="error", error=refused)
        try:
            egress = await models.egress_socket(self.runs_dir, self._egress_allow(run, agent)) \
                if models is not None else None
            confinement = await self._confine(run, agent, runtime, workspace, workdir, fx_path, tools_path,
                                              cli_state, hide=fronted.hide if fronted is not None else None,
                                              egress=egress)
        except SandboxRefused as exc:
            _drop_scratch(workspace, scratch)
            fx_path.unlink(missing_ok=True)
            tools_path.unlink(missing_ok=True)
            log.warning("run refused: it cannot be sandboxed", session_key=run.session_key, why=str(exc))
            return RunOutcome(status="error", error=str(exc))
        confined_person = (person.id if person is not None and person.role != "guest"
                           and person.confined(admins_read_transcripts=self._people.admins_read_transcripts())
                           else None)  # a guest's run reaches its own chat only, as any non-owner run
        token = issue_run_token(self._run_tokens, run, tuple(str(p) for p in confinement.visible),
                                person_id=confined_person)
        issued = None
        if fronted is not None and models is not None:  # a stand-in, issued and revoked with the run token
            issued = await models.issue(fronted, run_id=run.id, agent=agent, session_key=run.session_key,
                                        person_id=person.id if person is not None else None,
                                        owner=is_owner_run(run), isolated=confinement.socket is not None)
        return _Turn(run=run, agent=agent, runtime=runtime, resume_id=resume_id, workdir=workdir, workspace=workspace,
                     scratch=scratch, fx_path=fx_path, tools_path=tools_path, cli_state=cli_state, before=before,
                     confinement=confinement, token=token, started=time.monotonic(),
                     person_id=person.id if person is not None else None, models=issued,
                     model_drop=fronted.drop if fronted is not None else ())

    async def _prepare_on_node(self, run: Run, agent: AgentConfig, runtime: Runtime, resume_id: str | None,
                               person: PersonView | None, project: ProjectConfig | None, *,
                               fallback: bool = True) -> _Turn | RunOutcome:
        """A turn of an agent placed on a node (``gateway.agent_hosts``): the node found and described, its paths
        (the session's project folder or worktree there, made by the node), the model gateway's stand-in at the
        address the node reaches, and the run token; the node sandboxes the CLI itself, and diffs the project. A
        node that is away keeps the message for its return."""
        hosts = self._services.find(AGENT_HOSTS)
        if hosts is None:
            return RunOutcome(status="error", error=f"agent {agent.id} runs on node {agent.node}, but this gateway "
                                                    "has no node service")
        owner = is_owner_run(run)
        host, why, kept = await hosts.try_place(agent)
        if host is None and kept and fallback and agent.nodeFallback is not None:  # away: another agent takes it
            log.info("turn's node is away: its fallback agent takes it", session_key=run.session_key,
                     node=agent.node, fallback=agent.nodeFallback, why=why)
            turn = await self._prepare(run, fallback_for=agent)
            if isinstance(turn, _Turn):
                turn.fallback = True
            return turn
        if host is None:
            return (await self._keep_for_node(run, agent, why, mid_turn=False) if kept
                    else RunOutcome(status="error", error=why))
        if not host.takes_input and _talks_over_stdin(agent, runtime):
            fix = "" if runtime.self_driven else ", or use permissions allowlist or bypass"
            return RunOutcome(status="error", error=f"agent {agent.id} runs on node {host.name}: its {runtime.name} "
                                                    "runtime in this mode talks to its CLI over stdin, which this "
                                                    "node does not take (agent.input: not offered by its remoteclaw, "
                                                    f"or held back by nodes.denyCommands){fix}")
        settings = self._config.config.agents.sandbox_for(agent)
        if not owner and settings.network_for(owner=False) != "open":
            return RunOutcome(status="error", error=f"agent {agent.id} runs on node {host.name}, whose sandbox gives "
                                                    "runs its network (the MCP shim reaches the gateway over it): "
                                                    "runs of people other than the owner need the agent's "
                                                    "sandbox.othersNetwork open there")
        models = self._services.find(MODEL_GATEWAY)
        fronted = None
        if host.facts.get("credentials") == "own":  # the node's own CLI login: only the owner's turns hold it
            if not owner and agent.credentialsMode != "shared":
                return RunOutcome(status="error", error=f"agent {agent.id} runs on node {host.name} with that "
                                                        "machine's own login, which only the owner's turns may use "
                                                        "(credentialsMode: shared lets others)")
        elif models is not None and models.enabled:
            plan = await asyncio.to_thread(models.plan, agent, runtime)
            refused = models.refusal(plan, agent, owner=owner) if plan.unfronted else None
            if refused is not None:
                return RunOutcome(status="error", error=refused)
            fronted = plan if not plan.unfronted else None
        try:  # the message's files go with the turn, into its folder on the node
            attachments = await asyncio.to_thread(hosts.attachments, run, host.name) \
                if any(req.files for req in run.requests) else []
        except hosts.TooLarge as exc:
            log.info("turn refused: its attachments are too large for a node", session_key=run.session_key,
                     node=host.name)
            return RunOutcome(status="error", error=str(exc))
        workdir = None
        if project is not None:  # a folder on the node: it checks it is lent, and makes the worktree
            try:
                workdir = await hosts.workdir(host.node_id, project, run.session_key, create=True)
            except RpcError as exc:
                if (exc.details or {}).get("code") in hosts.LOST_CODES:  # gone since it was placed: it waits
                    return await self._keep_for_node(run, agent, f"node {host.name} went away ({exc.message})",
                                                     mid_turn=False)
                return RunOutcome(status="error", error=f"project {project.name}: {exc.message}")
            run.answer_facts["project"] = workdir.project
            if workdir.branch:
                run.answer_facts["branch"] = workdir.branch
        run.answer_facts["node"] = host.name
        private_dir(self.root)
        private_dir(self.runs_dir)
        fx_path = self.runs_dir / f"{run.id}.side-effects.ndjson"  # the node's records are copied here at the end
        tools_path = self.runs_dir / f"{run.id}.plugin-tools.json"
        for path in (fx_path, tools_path):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        # No path of the run is resolved on the gateway's disk: a file it names is read on its node (the token's node)
        confinement = RunConfinement("node", settings, visible=())
        confined_person = (person.id if person is not None and person.role != "guest"
                           and person.confined(admins_read_transcripts=self._people.admins_read_transcripts())
                           else None)
        token = issue_run_token(self._run_tokens, run, (), person_id=confined_person, node_id=host.node_id)
        try:  # the shim connects where the node does, maybe another replica: they accept its token too
            await self._run_tokens.share(token, self._config.config.agents.timeoutSeconds + SHARED_TOKEN_SLACK_S)
        except StoreError as exc:
            log.warning("a node turn's token is not shared: its tool calls work only if its shim reaches this "
                        "replica", session_key=run.session_key, error=str(exc))
        issued = None
        if fronted is not None and models is not None:
            issued = await models.issue(fronted, run_id=run.id, agent=agent, session_key=run.session_key,
                                        person_id=person.id if person is not None else None, owner=owner,
                                        isolated=False,
                                        shared_for_s=self._config.config.agents.timeoutSeconds + SHARED_TOKEN_SLACK_S)
            host_, port = self._listen()
            local_root = f"http://{'127.0.0.1' if host_ in ('0.0.0.0', '', '::') else host_}:{port}"
            issued.env = hosts.rebase(issued.env, local_root, host.http_origin)
            issued.base_urls = hosts.rebase(issued.base_urls, local_root, host.http_origin)
        process = hosts.process(host, session_key=run.session_key, run_id=run.id, agent=agent,
                                logins=runtime.logins, local_fx=fx_path,
                                timeout_s=self._config.config.agents.timeoutSeconds, attachments=attachments,
                                workdir=workdir, project=project)
        place = process.place
        # A lent folder or a project on the node: the turn's own files (attachments) go in its .remoteclaw/ there.
        scratch = place.workspace if place.private else place.workspace / PRIVATE_DIR
        return _Turn(run=run, agent=agent, runtime=runtime, resume_id=resume_id, workdir=workdir,
                     workspace=place.workspace, scratch=scratch, fx_path=fx_path, tools_path=tools_path,
                     cli_state=place.cli_state, before=None, confinement=confinement, token=token,
                     started=time.monotonic(), person_id=person.id if person is not None else None, models=issued,
                     model_drop=fronted.drop if fronted is not None else (), node=process)

    async def _person(self, person_id: str | None) -> PersonView | None:
        """The person a session belongs to (None: nobody's, or a person since removed)."""
        if person_id is None:
            return None
        try:
            return await self._people.get(person_id)
        except InvalidRequest:
            return None

    async def _spec(self, turn: _Turn) -> RunSpec:
        """What the CLI is started with: the plugin (and, for an owner's run, desktop) tools' file, the prompt (with
        what ``before_agent_start`` hooks prepend), the shim's context and the system prompt."""
        run, agent, confinement = turn.run, turn.agent, turn.confinement
        # The plugin tools, handed over in a file: the shim lists them without asking the gateway at start.
        plugins = self._services.find(PLUGIN_TOOLS)
        listing = plugins.tool_listing(run.agent_id) if plugins is not None else {"tools": []}
        desktop = self._services.find(DESKTOP_TOOLS)
        if desktop is not None and is_owner_run(run):  # the desktop nodes' tools, as their drivers declare them
            listing = {**listing, "desktop": await desktop.tool_listing(is_owner=True)}
        turn.tools_path.write_bytes(orjson.dumps(listing))
        if turn.node is not None:
            turn.node._plugin_tools = orjson.dumps(listing).decode()
        prompt = prompt_for(run)
        if turn.node is not None and any(req.files for req in run.requests):  # as the node names them
            prompt = self._services.get(AGENT_HOSTS).renamed_in_prompt(prompt, run)
        if turn.scratch != turn.workspace:  # the prompt names attachments by their place in the workspace
            prompt = _ATTACHMENT_NOTE.sub(rf"\1{PRIVATE_DIR}/{ATTACHMENTS_DIR}/", prompt)
        if self._hooks.has("before_agent_start"):
            decided = await self._hooks.decide("before_agent_start", {
                "sessionKey": run.session_key, "agentId": run.agent_id, "runId": run.id, "prompt": prompt,
                "channel": run.last.origin.channel if run.last.origin else None, "isOwner": run.is_owner})
            extra = decided.get("prependContext")
            if isinstance(extra, str) and extra.strip():
                prompt = f"{extra.strip()}\n\n{prompt}"
        ctx_env = context_env(run, agent=agent, config=self._config.config, listen=self._listen(),
                              fx_path=turn.fx_path, token=turn.token)
        ctx_env["REMOTECLAW_PLUGIN_TOOLS_FILE"] = str(turn.tools_path)
        if confinement.socket is not None:  # a network of its own: the gateway through a bound socket
            ctx_env["REMOTECLAW_GATEWAY_SOCKET"] = str(confinement.socket)
        shim, command, sandboxed = sys.executable, agent.command, confinement.how == "bwrap"
        if turn.node is not None:  # the shim starts on the node and reaches the gateway as the node does
            host, place = turn.node.host, turn.node.place
            ctx_env.update(REMOTECLAW_GATEWAY_URL=host.gateway_url,
                           REMOTECLAW_SIDE_EFFECTS_FILE=str(place.fx_path),
                           REMOTECLAW_PLUGIN_TOOLS_FILE=str(place.tools_path))
            shim, command = str(host.facts["python"]), list(host.facts["clis"][agent.runtime])
            sandboxed = host.facts.get("sandbox") == "bwrap"
        return RunSpec(
            prompt=prompt,
            system_prompt=build_system_prompt(agent_name=agent.name or agent.id, session_key=run.session_key,
                                              origin=run.last.origin, is_owner=run.is_owner,
                                              source=run.first.source),
            workspace=turn.workspace,
            mcp=McpServer(command=shim, args=("-m", "mcp_shim"), env=ctx_env),
            resume_id=turn.resume_id, model=agent.model, command=command, env=self._run_env(turn),
            state_dir=turn.cli_state, permissions=agent.permissions, approve=self._approver(run),
            confine=confinement.confine, pass_env=tuple(confinement.settings.passEnv),
            sandboxed=sandboxed,
            fronted=Fronted(turn.models.token, turn.models.base_urls, turn.models.config)
            if turn.models is not None else None,
        )

    @staticmethod
    def _run_env(turn: _Turn) -> dict[str, str]:
        """The agent's ``env`` as the run gets it: fronted, its real credentials out and the stand-in and the
        model gateway's base URLs in (``gateway.credentials``)."""
        if turn.models is None:
            return dict(turn.agent.env)
        return {**{k: v for k, v in turn.agent.env.items() if k not in turn.model_drop}, **turn.models.env}

    def _wire_usage(self, res: TurnResult, used: Any) -> TurnResult:
        """The turn's usage as the model API stated it (what the CLI reported is kept where the wire saw none),
        and the budget's stop as the turn's error."""
        if any(used.usage.values()):
            res.usage = dict(used.usage)
            res.model = res.model or used.model
            if res.cost_usd is None and used.cost_usd:
                res.cost_usd = used.cost_usd
        if used.stopped:
            res.ok, res.error = False, used.stopped
        return res

    async def _run(self, turn: _Turn, spec: RunSpec) -> TurnResult:
        """The CLI's turn: the live note, the events streamed to the operators and the transcript, typing kept
        alive, messages sent mid-turn fed to a steerable CLI."""
        run = turn.run
        turn.progress = self._progress_note(run)
        if turn.progress is not None:
            self._notes[run.session_key] = turn.progress
        turn.stream = RunStream(self._runs, self._db, run, turn.progress)
        run.aside = turn.stream.aside
        origin = run.last.origin
        if origin is not None and run.last.deliver:
            turn.typing = asyncio.create_task(self._keep_typing(origin), name=f"typing-{run.id}")

        def on_spawn(at: float) -> None:
            run.spawned_mono = at

        feed: StdinFeed | None = None
        # messages sent mid-turn go to this CLI (on a node: to its stdin there, if the node takes it)
        if effective_mode(self._config.config, turn.agent.id) == "steer" and (
                turn.node is None or turn.node.host.takes_input):
            spec.steer, feed = True, StdinFeed()
            run.steer = _steer_into(feed, turn.runtime)
        if turn.node is not None:
            try:
                return await run_turn(turn.runtime, spec, turn.stream.on_event,
                                      no_output_timeout=self._config.config.agents.noOutputTimeoutSeconds,
                                      on_spawn=on_spawn, feed=feed, process=turn.node)
            except RpcError as exc:  # the node refused, or went away (its messages then wait for it)
                if (exc.details or {}).get("code") == self._services.get(AGENT_HOSTS).LOST:
                    turn.node_lost = exc.message
                return TurnResult(ok=False, error=exc.message)
        return await run_turn(turn.runtime, spec, turn.stream.on_event,
                              no_output_timeout=self._config.config.agents.noOutputTimeoutSeconds,
                              on_spawn=on_spawn, feed=feed)

    async def _end(self, turn: _Turn) -> Any:
        """Whatever the turn took, given back. What must happen comes first, without an await that a cancellation
        could cut short: steering off, typing stopped, the token and stand-in revoked, the side effects read, the
        files gone. Returns what the model gateway saw the run use (None: not fronted)."""
        run = turn.run
        run.steer = run.aside = None
        if turn.typing is not None:
            turn.typing.cancel()
        self._run_tokens.revoke(turn.token)
        models = self._services.find(MODEL_GATEWAY) if turn.models is not None else None
        used = models.revoke(turn.models.token) if models is not None else None
        run.side_effects = read_effects(turn.fx_path)
        if turn.node is None:  # a node's workspace is the node's to clean (it is not a path here)
            _drop_scratch(turn.workspace, turn.scratch)
        turn.fx_path.unlink(missing_ok=True)
        turn.tools_path.unlink(missing_ok=True)
        if models is not None and turn.models is not None and turn.node is not None:
            used = await models.gather(turn.models.token, used)  # what it used where its node's address led
        approvals = self._services.find(RUN_WATCHERS)
        if approvals is not None:  # a decision arriving after this is refused: the run has ended
            await approvals.run_ended(run.session_key)
        if turn.progress is not None:
            if self._notes.get(run.session_key) is turn.progress:
                del self._notes[run.session_key]
            await turn.progress.close()
        if turn.stream is not None:
            await turn.stream.save()
        return used

    async def _record(self, s: AsyncSession, turn: _Turn, res: TurnResult) -> str:
        """The turn in the database (one unit, retried through a database restart): the CLI's session id, the
        usage, the change in a project, and the answer's transcript entry; returns the reply to deliver."""
        run, runtime = turn.run, turn.runtime
        if res.retried_fresh:
            await SessionRepo.forget_cli_session(s, run.session_key, runtime.name)
        own_session = not turn.fallback  # a fallback's conversation is not the one the node resumes on its return
        await SessionRepo.record_usage(s, run.session_key, runtime=runtime.name,
                                       cli_session_id=res.session_id if own_session and (res.ok or res.session_id)
                                       else None, usage=res.usage, model=res.model)
        if res.model:
            run.answer_facts["model"] = res.model
        await UsageRepo.record(s, run_id=run.id, session_key=run.session_key, agent_id=turn.agent.id,
                               runtime=runtime.name, model=res.model or turn.agent.model, usage=res.usage,
                               cost_usd=res.cost_usd, person_id=turn.person_id)
        if res.usage or res.cost_usd is not None:
            run.answer_facts["usage"] = turn_facts(res.usage, res.cost_usd)
        reply = self._page_reply(run, res.reply) if res.ok else res.reply
        changed = (await self._turn_diff(run, turn.workdir, turn.before) if turn.node is None
                   else await self._node_diff(run, turn.node.diff))
        if changed is not None:  # in the transcript entry and the final chat event: the web chat renders it
            run.answer_facts["diff"] = changed
            if res.ok and reply and not clean_reply(reply)[1]:  # a silent answer stays silent
                reply = f"{reply}\n\n{DIFF_MARK} {changed['summary']}"
        if res.ok and reply:
            entry = await SessionRepo.add_entry(s, run.session_key, "assistant", reply, run_id=run.id,
                                                meta=dict(run.answer_facts))
            await s.flush()
            run.answer_entry_id = entry.id
        return reply

    async def _confine(self, run: Run, agent: AgentConfig, runtime: Runtime, workspace: Path, workdir: Workdir | None,
                       fx_path: Path, tools_path: Path, cli_state: Path,
                       hide: tuple[str, ...] | None = None, egress: Path | None = None) -> RunConfinement:
        """The run's sandbox (``gateway.sandbox``), with the files it hands back made ready to be shown in it."""

        # The hand-back files are bound into the sandbox, so they must exist first. Made here on the loop's
        # thread, between two callbacks: a file descriptor opened in a worker thread was seen closed under it
        # while 16 runs ended at once (the 200-job cron test), so no descriptor of ours lives across threads.
        for path in (fx_path, tools_path):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))

        def prepare() -> tuple[list[Path], list[Path]]:
            cli_state.mkdir(parents=True, exist_ok=True, mode=0o700)
            write = [cli_state, fx_path]
            git_dir = shared_git_dir(workdir.path) if workdir is not None and workdir.worktree else None
            if git_dir is not None:  # a worktree commits into its repository's own .git
                write.append(git_dir)
            return write, [Path(p.path).expanduser() for p in agent.projects]

        write, owner_paths = await asyncio.to_thread(prepare)
        return await self._sandbox.confinement(
            agent, owner=is_owner_run(run), session_key=run.session_key, workspace=workspace, write=write,
            read=[tools_path], owner_paths=owner_paths, logins=runtime.logins,
            credentials=runtime.credentials if hide is None else (),  # fronted: the gateway holds the login
            cli_settings=runtime.settings, hide=hide or (), egress=egress)

    def _egress_allow(self, run: Run, agent: AgentConfig) -> list[str]:
        """The hosts this run's tier may reach through the HTTPS proxy (none where the run has the network)."""
        cfg = self._config.config
        sandbox, owner = cfg.agents.sandbox_for(agent), is_owner_run(run)
        if sandbox.network_for(owner=owner) == "open":
            return []
        return sandbox.egress_for(owner=owner, default=cfg.modelGateway.egress.allow)

    def _approver(self, run: Run) -> Approve | None:
        """How a CLI that asks its client (Codex's app-server) puts a tool use to this run's person."""
        approvals = self._services.find(TOOL_APPROVALS)
        if approvals is None:
            return None

        async def approve(tool_name: str, tool_input: Any) -> dict[str, Any]:
            return await approvals.ask_and_wait(run.agent_id, run.session_key, tool_name, tool_input)

        return approve

    async def _snapshot(self, workdir: Workdir | None) -> str | None:
        """The work tree's tree id before the turn, in a git project (None: nothing to diff against)."""
        if workdir is None or not workdir.git:
            return None
        try:
            return await snapshot(workdir.path)
        except (GitError, OSError) as exc:
            log.warning("no snapshot of the project before the turn: no diff", path=str(workdir.path),
                        error=str(exc))
            return None

    async def _turn_diff(self, run: Run, workdir: Workdir | None, before: str | None) -> dict[str, Any] | None:
        """What the turn changed in its git project: saved as a ``.diff`` file for the chat (and ``/diff``), and
        described for the transcript (summary, counts, the diff text for the web chat, cut when huge)."""
        if workdir is None or before is None:
            return None
        try:
            diff = await diff_trees(workdir.path, before, await snapshot(workdir.path))
        except (GitError, OSError) as exc:
            log.warning("the turn's diff could not be made", run_id=run.id, error=str(exc))
            return None
        return await self._keep_diff(run, diff)

    async def _node_diff(self, run: Run, made: dict[str, Any] | None) -> dict[str, Any] | None:
        """What a node turn changed in its git project, as the node diffed it: kept as a local turn's is."""
        if made is None:
            return None
        try:
            diff = Diff(text=str(made["text"]), files=int(made["files"]), added=int(made["added"]),
                        removed=int(made["removed"]))
        except (KeyError, TypeError, ValueError):
            log.warning("a node sent a diff in an unknown shape", run_id=run.id)
            return None
        return await self._keep_diff(run, diff)

    async def _keep_diff(self, run: Run, diff: Diff) -> dict[str, Any] | None:
        """The turn's diff saved as a ``.diff`` file for the chat (and ``/diff``), and described for the
        transcript."""
        if diff.empty:
            return None
        path = await asyncio.to_thread(save_diff, self._state_dir, run.session_key, diff)
        self._diff_files[run.id] = path
        text = diff.text if len(diff.text) <= MAX_PAGE_DIFF else diff.text[:MAX_PAGE_DIFF] + "\n… (cut)\n"
        return {"summary": diff.summary(), "files": diff.files, "added": diff.added, "removed": diff.removed,
                "name": path.name, "text": text}

    def _page_reply(self, run: Run, reply: str) -> str:
        """A web chat reply as the page shows it: reply tags become ``replyTo`` (the message it quotes) and
        ``NO_REPLY`` becomes nothing. Channel replies keep their tags: delivery applies them."""
        origin = run.last.origin
        if origin is None or origin.channel != "webchat" or run.last.deliver:
            return reply
        body, silent, reply_to = clean_reply(reply)
        target = origin.reply_to_id if reply_to == "current" else reply_to
        if target and not silent:
            run.answer_facts["replyTo"] = target
        return "" if silent else body

    # -- delivery ------------------------------------------------------------------------------

    async def after_run(self, run: Run) -> None:
        """Keep a failed turn in the transcript; deliver a channel run's reply, or one line saying why it failed."""
        diff_file = self._diff_files.pop(run.id, None)
        if run.status != "ok":
            await self._record_failure(run)
        origin = run.last.origin
        if run.last.source == "chat" and not run.last.deliver:  # the web chat page (or an API client) watches
            voice = self._services.find(VOICE)
            if run.status == "ok" and voice is not None:
                await self._speak_to_page(run, voice)
            return
        if origin is None or not run.last.deliver or run.status == "aborted":
            return
        if run.status != "ok":
            why = run.error or "unknown error"
            await self._deliver(origin, one_line(f"⚠️ Sorry, that didn't work: {why}"), run.session_key, run_id=run.id)
            changed = run.answer_facts.get("diff")
            if diff_file is not None and changed and origin.channel != "webchat":  # what it did before failing
                await self.send_file(origin, diff_file, run.session_key,
                                     caption=f"{DIFF_MARK} changed before it failed: {changed['summary']}")
            return
        body, silent, reply_to = clean_reply(run.reply)
        if silent:
            log.info("silent reply", run_id=run.id)
            return
        if is_duplicate(body, run.side_effects, origin):
            log.info("reply already sent by a message tool", run_id=run.id)
            return
        reply_to_id = origin.reply_to_id if reply_to == "current" else reply_to
        speak = False
        voice = self._services.find(VOICE)
        if voice is not None:
            body, speak = await voice.auto_reply(body, inbound_voice=run.last.voice_in)
        # Through the outbox: written down before it is sent, so a crash in between loses no reply.
        await self._deliver(origin, body, run.session_key, run_id=run.id, reply_to_id=reply_to_id)
        if speak and voice is not None:
            await self._speak(origin, body, run, voice)
        if diff_file is not None and origin.channel != "webchat":  # the web chat renders the diff itself
            await self.send_file(origin, diff_file, run.session_key)

    async def _deliver(self, origin: Origin, text: str, session_key: str, *, run_id: str,
                       reply_to_id: str | None = None) -> int:
        """Through the outbox: written down (as this replica's) before it is sent."""
        return await outbox.deliver(self._db, self._replica_id, self._platforms(), origin, text, session_key,
                                    run_id=run_id, reply_to_id=reply_to_id)

    async def send_file(self, origin: Origin, path: Path, session_key: str, caption: str | None = None) -> bool:
        """Attach a file the gateway made (a turn's diff) to the chat behind ``origin``; whether it went."""
        platforms = self._platforms()
        if platforms is None:
            return False
        try:
            await platforms.send_attachment(origin.channel, origin.account_id, origin.to, str(path),
                                            caption=caption, thread_id=origin.thread_id, session_key=session_key)
        except Exception as exc:
            log.warning("file not sent to the chat", file=path.name, channel=origin.channel, error=str(exc))
            return False
        return True

    async def _record_failure(self, run: Run) -> None:
        """A failed or stopped turn as a transcript entry, so a reload still shows why nothing was answered."""
        aborted = run.status == "aborted"
        text = "stopped" if aborted else (run.error or "the run failed")
        meta: dict[str, object] = {"aborted": True} if aborted else {"error": True}

        async def write(s: AsyncSession) -> None:
            if await SessionRepo.get(s, run.session_key) is None:  # the session was deleted under the run
                return
            entry = await SessionRepo.add_entry(s, run.session_key, "assistant", text, run_id=run.id,
                                                meta={**meta, **run.answer_facts})
            await s.flush()
            run.answer_entry_id = entry.id

        try:  # like an answer, the explanation waits through a database restart instead of being dropped
            await self._db.persist(write, what="the failed turn's explanation")
        except Exception:
            log.exception("failed turn not written to the transcript", run_id=run.id)

    async def _speak_to_page(self, run: Run, voice: Voice) -> None:
        """Auto-TTS for the web chat: the clip goes to the page's viewers as a ``chat.audio`` event."""
        body, silent, _reply_to = clean_reply(run.reply)
        text, wanted = await voice.auto_reply(body, inbound_voice=run.last.voice_in)
        if silent or not wanted:
            return
        try:
            # MP3, not OGG/Opus: the page must play it in Safari too (see gateway/voice/codec.py)
            speech = await voice.speak_for(text, "webchat", session_key=run.session_key)
            data = await asyncio.to_thread(Path(speech.path).read_bytes)
        except (RpcError, OSError) as exc:
            log.warning("spoken reply not made for the web chat", run_id=run.id, error=str(exc))
            return
        self._broadcast("chat.audio", {"runId": run.id, "sessionKey": run.session_key, "mimeType": speech.mime,
                                         "durationS": round(speech.duration_s, 2), "provider": speech.provider,
                                         "base64": base64.b64encode(data).decode()})

    async def _speak(self, origin: Origin, text: str, run: Run, voice: Voice) -> None:
        """The reply as a voice message after its text (auto-TTS); a failure costs only the voice."""
        platforms = self._platforms()
        if platforms is None:
            return
        try:
            speech = await voice.speak_for(text, origin.channel, session_key=run.session_key)  # as that app plays
            await platforms.send_attachment(origin.channel, origin.account_id, origin.to, speech.path,
                                            thread_id=origin.thread_id, session_key=run.session_key)
        except RpcError as exc:
            log.warning("spoken reply not sent; the text went alone", run_id=run.id, error=exc.message)
        else:
            log.info("spoken reply sent", run_id=run.id, provider=speech.provider, seconds=speech.duration_s)

    async def notify(self, origin: Origin, text: str, session_key: str, *, reply_to_id: str | None = None) -> int:
        """Send ``text`` to the chat behind ``origin``; how many messages that took (0: no platforms)."""
        platforms = self._platforms()
        if platforms is None:
            log.warning("no chat platforms on this gateway: reply not delivered", session_key=session_key)
            return 0
        return await platforms.deliver(origin, text, session_key, reply_to_id=reply_to_id)
