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

from gateway.access.principals import MCP_CLIENT
from gateway.dispatch.callers import ADMIN, OPERATOR_SCOPES, Caller, SessionScope

if TYPE_CHECKING:
    from starlette.requests import Request

    from gateway.agents.tokens import RunGrant
    from gateway.people.service import PeopleService
    from gateway.store import Database

__all__ = ["HttpCredentials", "request_token"]


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
                 default_agent: str) -> None:
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
            return Caller(conn_id=conn_id, role="operator", scopes=OPERATOR_SCOPES, client_id="http",
                          client_mode="backend", remote=remote)
        grant = self._run_tokens.grant(given)
        if grant is None:
            from gateway.people.signin import SIGNIN_PREFIX, person_grant

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
        key = grant.session_key or f"agent:{self._default_agent}:main"
        return Caller(conn_id=conn_id, role="operator", scopes=frozenset({ADMIN}) if owner else frozenset(),
                      client_id=MCP_CLIENT, client_mode="backend", remote=remote,
                      methods=None if owner else frozenset(),
                      confined_to=None if owner else SessionScope(key, person_id=reach_person),
                      person_id=grant.person_id)
