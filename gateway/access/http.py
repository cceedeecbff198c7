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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from gateway.access.policy import may
from gateway.access.principals import MCP_CLIENT
from gateway.dispatch.callers import ADMIN, OPERATOR_SCOPES, Caller, SessionScope

if TYPE_CHECKING:
    from starlette.requests import Request

    from gateway.access.doors import AccessControl
    from gateway.agents.tokens import RunGrant
    from gateway.people.service import PeopleService

TokenVerifier = Callable[[str, str, str], Awaitable[Caller | None]]
"""A capability's own kind of credential (``/mcp`` tokens): ``(token, conn_id, remote)`` -> its caller, or None."""

__all__ = ["HttpCredentials", "mcp_token_caller", "request_token"]


class RunTokenTable(Protocol):
    async def find(self, given: str | None, address: str = "") -> RunGrant | None: ...


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
    """Turns an HTTP request's credential into a ``Caller`` (None: no credential, or not a live one), and decides
    an HTTP route's read of a conversation's thing with the access model. Built once by the composition root."""

    def __init__(self, *, gateway_token: str, run_tokens: RunTokenTable, people: PeopleService,
                 access: AccessControl) -> None:
        self._token = gateway_token
        self._run_tokens = run_tokens
        self._people = people
        self._access = access
        self._verifiers: list[TokenVerifier] = []

    def add_verifier(self, verifier: TokenVerifier) -> None:
        """A capability's credentials (``/mcp`` tokens) are callers at the HTTP doors too."""
        self._verifiers.append(verifier)

    async def caller(self, request: Request, *, query: bool = False) -> Caller | None:
        given = request_token(request, query=query)
        if given is None:
            return None
        remote = request.client.host if request.client else ""
        conn_id = f"http-{remote}"
        if self._token and hmac.compare_digest(self._token.encode(), given.encode()):
            return Caller(conn_id=conn_id, role="operator", scopes=frozenset(OPERATOR_SCOPES), client_id="http",
                          client_mode="backend", remote=remote)
        grant = await self._run_tokens.find(given, remote)
        if grant is None:
            from gateway.people.service import SIGNIN_PREFIX
            from gateway.people.signin import person_grant

            if given.startswith(SIGNIN_PREFIX):
                grant = await person_grant(self._people, given)
        if grant is not None:  # as the handshake's caller_for: the grant's scopes, methods, confinement, person
            return Caller(conn_id=conn_id, role="operator", scopes=grant.scopes, client_id="http",
                          client_mode="backend", remote=remote, methods=grant.methods, confined_to=grant.confine,
                          reach=grant.reach, person_id=grant.person_id, run_session=grant.session_key,
                          run_node=grant.node_id, extra={"runId": grant.run_id} if grant.run_id else {})
        for verify in self._verifiers:
            found = await verify(given, conn_id, remote)
            if found is not None:
                return found
        return None

    async def may_read_session(self, request: Request, session_key: str, *, query: bool = False) -> int:
        """The HTTP door's decision on a conversation's thing: 200 (serve it), 401 (no live credential) or 403
        (a credential that may not read that conversation), as ``may(principal, "read", session)`` says."""
        caller = await self.caller(request, query=query)
        if caller is None:
            return 401
        obj = await self._access.session(session_key)
        return 200 if may(self._access.principal(caller), "read", obj) else 403


def mcp_token_caller(*, owner: bool, person_id: str | None, person_role: str | None, session_key: str,
                     conn_id: str, remote: str) -> Caller:
    """A ``/mcp`` token's caller at an HTTP door, as its MCP session's (``gateway.mcp_http.session``)."""
    reach_person = person_id if person_role != "guest" else None
    return Caller(conn_id=conn_id, role="operator", scopes=frozenset({ADMIN}) if owner else frozenset(),
                  client_id=MCP_CLIENT, client_mode="backend", remote=remote,
                  methods=None if owner else frozenset(),
                  confined_to=None if owner else SessionScope(session_key, person_id=reach_person),
                  person_id=person_id)
