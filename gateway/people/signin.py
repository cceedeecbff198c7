"""A person's own way in: the grant their web sign-in credential carries, and the page's exchange of a one-time
``/login`` link for that credential.

The credential is presented where the gateway token would be (``connect.auth.token``), so the web chat, OpenClaw's
Control UI and any client sign in with it unchanged. What it grants follows the person's role
(``gateway.people.roles``): a member or a guest gets the methods of a conversation of their own
(``PERSON_METHODS``) confined to their sessions; an admin every method, confined to their own sessions unless
``people.adminsReadTranscripts``; the owner everything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse

from gateway.agents.tokens import RunGrant
from gateway.dispatch.callers import SessionScope
from gateway.people.roles import scopes_for

if TYPE_CHECKING:
    from gateway.config import Config
    from gateway.people.service import PeopleService

__all__ = ["PERSON_METHODS", "SIGNIN_PATH", "person_grant", "redeem_endpoint", "signin_base"]

log = structlog.get_logger("gateway.people")

SIGNIN_PATH = "/people/signin"

PERSON_METHODS: Final = frozenset({
    # their conversations
    "chat.send", "chat.history", "chat.abort", "agent", "agent.wait", "sessions.list", "sessions.resolve",
    "sessions.patch", "sessions.reset", "sessions.delete", "sessions.describe", "sessions.subscribe",
    "sessions.messages.subscribe", "sessions.messages.unsubscribe", "tasks.list", "agents.list", "models.list",
    "agent.identity.get", "health", "status", "sessions.project", "sessions.diff",
    # what OpenClaw's Control UI asks for a conversation's page (each checks the session is theirs)
    "chat.startup", "chat.metadata", "progressCard.get", "sessions.branches.list", "sessions.companion.state",
    "sessions.observer.visibility", "talk.catalog",
    # what they spend
    "usage.status", "usage.cost", "sessions.usage",
    # what their runs ask them
    "exec.approval.list", "exec.approval.get", "exec.approval.resolve", "exec.approval.waitDecision",
    "approval.get", "approval.resolve", "question.list", "question.get", "question.resolve", "question.waitAnswer",
    # themselves
    "people.me", "people.signins.list", "people.signins.revoke", "mcp.tokens.create", "mcp.tokens.list",
    "mcp.tokens.revoke",
})
"""What a member's or a guest's sign-in may call: a conversation of their own, and nothing of the gateway's."""


def signin_base(config: Config, listen: tuple[str, int]) -> str:
    """Where ``/login`` links point: ``people.signinUrl``, ``gateway.publicUrl``, else where the gateway listens."""
    base = config.people.signinUrl or config.gateway.publicUrl
    if base:
        return base
    host, port = listen
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '', '::') else host}:{port}"


async def person_grant(people: PeopleService, credential: str) -> RunGrant | None:
    """The grant of a live sign-in credential (None: unknown or revoked, the handshake refuses it)."""
    signed = await people.authenticate(credential)
    if signed is None:
        return None
    person, signin_id = signed
    confine = (SessionScope(None, person_id=person.id)
               if person.confined(admins_read_transcripts=people.admins_read_transcripts()) else None)
    methods = None if person.role in ("owner", "admin") else PERSON_METHODS
    return RunGrant(scopes_for(person.role), methods, confine, (), person_id=person.id, signin_id=signin_id)


def redeem_endpoint(people: PeopleService):  # type: ignore[no-untyped-def]
    """``POST /people/signin {"code": …}``: a ``/login`` link opened in a browser becomes that browser's credential
    (``{"token", "person"}``), once. The page keeps the token as it keeps a gateway token."""

    async def redeem(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            body = None
        code = body.get("code") if isinstance(body, dict) else None
        if not isinstance(code, str) or not 8 <= len(code) <= 128:
            return JSONResponse({"error": "code: give the code of a sign-in link"}, status_code=400)
        agent = request.headers.get("user-agent", "")[:120]
        got = await people.redeem_signin(code, f"web sign-in ({agent or 'a browser'})")
        if got is None:
            return JSONResponse({"error": "code: this sign-in link is unknown, used or expired; send /login "
                                          "again for a new one"}, status_code=400)
        token, person = got
        log.info("person signed in to the web", person=person.id)
        return JSONResponse({"token": token, "person": {"id": person.id, "name": person.name, "role": person.role}},
                            headers={"cache-control": "no-store"})

    return redeem
