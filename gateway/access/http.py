"""The HTTP doors' principal: from a request's credential to the ``Caller`` the WebSocket handshake would give it.

An HTTP route that serves something of a conversation (a web chat file, a trajectory page, a browser file) asks
``may(principal, "read", obj)`` like every other door; the unguessable address it is served at is kept, but it is
no authorization of its own. The credential is the one a socket presents at ``connect``, taken from
``Authorization: Bearer <token>`` (or, for a page a browser opens from a link, ``?token=``): the gateway token,
an agent run's token, a person's sign-in, or a ``/mcp`` token. Each becomes the same ``Caller`` as at the
handshake (``gateway.server.handshake.caller_for``), so the decision is the model's, with the same principal.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Protocol

from gateway.access.policy import may
from gateway.access.principals import MCP_CLIENT
from gateway.dispatch.callers import ADMIN, OPERATOR_SCOPES, Caller, SessionScope

if TYPE_CHECKING:
    from collections.abc import Callable

    from starlette.requests import Request

    from gateway.agents.tokens import RunGrant
    from gateway.composition.gateway import Gateway
    from gateway.people.service import PeopleService
    from gateway.store import Database

__all__ = ["HttpCredentials", "credentials_of", "may_read_session", "request_token"]


class RunTokenTable(Protocol):
    def grant(self, given: str | None) -> RunGrant | None: ...


def request_token(request: Request, *, query: bool = False) -> str | None:
    """The credential a request presents: ``Authorization: Bearer``, else (``query``: a page opened from a link)
    the ``token`` query parameter."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if query:
        given = request.query_params.get("token", "").strip()
        return given or None
    return None


class HttpCredentials:
    """Turns an HTTP request's credential into a ``Caller`` (None: no credential, or not a live one)."""

    def __init__(self, *, gateway_token: str, run_tokens: RunTokenTable, people: PeopleService, db: Database,
                 default_agent: Callable[[], str]) -> None:
        self._token = gateway_token
        self._run_tokens = run_tokens
        self._people = people
        self._db = db
        self._default_agent = default_agent

    async def caller(self, request: Request, *, query: bool = False) -> Caller | None:
        given = request_token(request, query=query)
        if given is None:
            return None
        remote = request.client.host if request.client else ""
        conn_id = f"http-{remote}"
        if self._token and hmac.compare_digest(self._token.encode(), given.encode()):
            return Caller(conn_id=conn_id, role="operator", scopes=frozenset(OPERATOR_SCOPES), client_id="http",
                          client_mode="backend", remote=remote)
        grant = self._run_tokens.grant(given)
        if grant is None:
            from gateway.people.service import SIGNIN_PREFIX
            from gateway.people.signin import person_grant

            if given.startswith(SIGNIN_PREFIX):
                grant = await person_grant(self._people, given)
        if grant is not None:  # as the handshake's caller_for: the grant's scopes, methods, confinement, person
            return Caller(conn_id=conn_id, role="operator", scopes=grant.scopes, client_id="http",
                          client_mode="backend", remote=remote, methods=grant.methods, confined_to=grant.confine,
                          reach=grant.reach, person_id=grant.person_id, run_session=grant.session_key)
        return await self._mcp_caller(given, conn_id, remote)

    async def _mcp_caller(self, given: str, conn_id: str, remote: str) -> Caller | None:
        """A ``/mcp`` token, as its MCP session's caller (``gateway.mcp_http.session``)."""
        from gateway.mcp_http import tokens

        grant = await tokens.verify(self._db, given)
        if grant is None or grant.expired():
            return None
        owner = grant.owner and grant.person_id is None
        reach_person = grant.person_id if grant.person_role != "guest" else None
        key = grant.session_key or f"agent:{self._default_agent()}:main"
        return Caller(conn_id=conn_id, role="operator", scopes=frozenset({ADMIN}) if owner else frozenset(),
                      client_id=MCP_CLIENT, client_mode="backend", remote=remote,
                      methods=None if owner else frozenset(),
                      confined_to=None if owner else SessionScope(key, person_id=reach_person),
                      person_id=grant.person_id)


def credentials_of(gw: Gateway) -> HttpCredentials:
    """The gateway's HTTP credentials (cheap: it holds only references)."""
    return HttpCredentials(gateway_token=gw.token, run_tokens=gw.run_tokens, people=gw.people, db=gw.db,
                           default_agent=lambda: gw.sessions.default_agent_id)


async def may_read_session(gw: Gateway, request: Request, session_key: str, *, query: bool = False) -> int:
    """The HTTP door's decision on a conversation's thing: 200 (serve it), 401 (no live credential) or 403
    (a credential that may not read that conversation), as ``may(principal, "read", session)`` says."""
    caller = await credentials_of(gw).caller(request, query=query)
    if caller is None:
        return 401
    obj = await gw.access.session(session_key)
    return 200 if may(gw.access.principal(caller), "read", obj) else 403
