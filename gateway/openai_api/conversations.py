"""Who calls the API, and which session a request's conversation is.

The credential (``Authorization: Bearer``) is turned into a caller by ``gateway.access.http.HttpCredentials``, as
at every HTTP door: the gateway token (the owner), a person's sign-in, or a ``/mcp`` token (a person's own, made
with ``remoteclaw mcp token create --person ID``: how a program calling us, a peer, is given its own identity).

A conversation is a session in the caller's own name space, so no name a caller can send reaches another's:

- a person (their sign-in, or their token): ``agent:<agent>:person:<them>:api:<conversation>``;
- the owner without a person (the gateway token, an owner-tier ``/mcp`` token): ``agent:<agent>:api:<conversation>``.

``<conversation>`` is the ``X-Remoteclaw-Conversation`` header (``api.openai.conversationHeader``), else the body's
``user``, else ``default``: one conversation per caller and agent unless the caller names more. Whether the caller
may write there is still the access model's decision (``chat.send``'s declaration, and ``claim_session``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from gateway.access.principals import MCP_CLIENT
from gateway.dispatch.callers import WRITE, Caller
from gateway.openai_api.errors import ApiError
from gateway.server.request_rate import RequestRate

if TYPE_CHECKING:
    from gateway.access import Principal

__all__ = ["TURN_METHODS", "CallerRates", "api_caller", "conversation", "rate_key", "session_key"]

TURN_METHODS = frozenset({"chat.send", "chat.abort"})
"""What a person's ``/mcp`` token may call through this door: a turn in a conversation of theirs (the access model
still decides which)."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=-]{0,127}$")
DEFAULT_CONVERSATION = "default"


def api_caller(caller: Caller) -> Caller:
    """The caller a turn runs as. A person's ``/mcp`` token is, at other HTTP doors, a reader only (no method); at
    this one it may also send into a conversation, its principal unchanged (the same person, confinement and tier:
    ``methods`` stays set, so it is never the owner's)."""
    if caller.client_id == MCP_CLIENT and caller.methods is not None:
        return replace(caller, scopes=caller.scopes | {WRITE}, methods=caller.methods | TURN_METHODS)
    return caller


def conversation(header: str | None, user: str | None, header_name: str) -> str:
    """The conversation a request names: the header, else ``user``, else ``default``.

    Raises:
        ApiError: 400 naming the header or ``user`` when it is not a name a session can carry.
    """
    for value, where in ((header, header_name), (user, "user")):
        if value is None or value == "":
            continue
        if not _NAME.fullmatch(value):
            raise ApiError(400, f"Invalid value for '{where}': a conversation name is 1-128 letters, digits and "
                                "._@+=- (starting with a letter or digit).", param=where, code="invalid_value")
        return value.lower()
    return DEFAULT_CONVERSATION


def session_key(p: Principal, agent_id: str, conversation_name: str) -> str:
    """The session of ``conversation_name`` with ``agent_id`` for principal ``p`` (see the module docstring).

    Raises:
        ApiError: 403 for a credential that has no conversations of its own (an agent run's token).
    """
    if p.person_id is not None:
        return f"agent:{agent_id}:person:{p.person_id}:api:{conversation_name}"
    if p.is_owner:
        return f"agent:{agent_id}:api:{conversation_name}"
    raise ApiError(403, "This credential has no conversations of its own: call with the gateway token, a person's "
                        "sign-in or a person's token (remoteclaw mcp token create --person ID).",
                   type="permission_error", code="no_conversations")


def rate_key(p: Principal, caller: Caller) -> str:
    """Whose bucket a request takes from: the person, else the run, else the owner."""
    if p.person_id is not None:
        return f"person:{p.person_id}"
    if caller.run_session is not None:
        return f"run:{caller.run_session}"
    return "owner"


class CallerRates:
    """One token bucket per caller (``gateway.server.request_rate``), sized by ``api.openai``."""

    MAX_CALLERS = 10_000

    def __init__(self) -> None:
        self._buckets: dict[str, RequestRate] = {}

    def take(self, key: str, per_minute: float, burst: int) -> None:
        """Take one request from ``key``'s bucket.

        Raises:
            ApiError: 429 with the seconds to wait, when it is empty.
        """
        if per_minute <= 0:
            return
        bucket = self._buckets.get(key)
        if bucket is None or bucket.per_second != per_minute / 60 or bucket.burst != burst:
            if len(self._buckets) >= self.MAX_CALLERS:
                self._buckets.clear()
            bucket = self._buckets[key] = RequestRate(per_minute / 60, burst)
        wait = bucket.take()
        if wait:
            raise ApiError(429, f"Rate limit reached: more than {per_minute:g} requests per minute (burst {burst}) "
                                f"from this caller (api.openai.requestsPerMinute).", type="rate_limit_error",
                           code="rate_limit_exceeded", retry_after_s=wait)
