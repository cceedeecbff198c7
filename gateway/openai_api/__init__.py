"""The OpenAI-compatible HTTP API: every OpenAI client (Open WebUI, LibreChat, editors, the ``openai`` SDK) talks to
an agent of the gateway, with its tools, projects, approvals and sandbox (docs/openai-api.md). Off by default.

- ``routes``: ``/v1/models``, ``/v1/chat/completions``, ``/v1/responses`` (admission, sessions, streaming);
- ``turns``: a request's turn, started with ``chat.send`` as the caller and followed through a session tap;
- ``conversations``: the caller's session for a conversation, its rate bucket;
- ``wire``: the request bodies, checked; ``shapes``: the answers; ``errors``: OpenAI's error shape;
- ``config``: the ``api.openai`` section.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.composition.capabilities import Capability

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost

CAPABILITY = Capability("openai_api", start="gateway.openai_api:start")
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""


async def start(host: CapabilityHost) -> None:
    """Capability entry: serve ``/v1`` when ``api.openai.enabled`` (turning it on or off later restarts the
    gateway, as every ``api`` change does; a request also reads the switch, so off is off at once)."""
    if not host.config.api.openai.enabled:
        return
    from gateway.openai_api.routes import OpenAiApi
    from gateway.openai_api.turns import TurnRunner

    runner = TurnRunner(host.call, host.tap_session, host.runs, host.db)
    api = OpenAiApi(host.config_store, host.http_credentials, host.access, host.people, host.sessions, host.runs,
                    runner)
    for route in api.routes():
        host.add_route(route)
