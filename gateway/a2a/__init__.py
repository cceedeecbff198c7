"""A2A (Agent2Agent, protocol 1.0) both ways: the gateway's agents as A2A agents, and the gateway as a client of
other A2A agents. Built on ``a2a-sdk`` (the ``a2a`` extra).

- ``server``: the routes (``/a2a/<agentId>`` JSON-RPC, the Agent Cards), who calls (the bearer as a caller, the
  peer's person), the rate limit, the SDK's request handler mounted on the gateway's Starlette app;
- ``card``: an agent's Agent Card from its config;
- ``tasks``: the task store (rows of ``a2a_tasks``), every read decided by the access model as the task's session;
- ``turns``: the SDK's agent executor: a message becomes a turn in the peer's session for its ``contextId``, the
  turn's events become task states, the live reply and artifacts;
- ``client``: our side as a client (resolve a card, send and stream a message), for the CLI and ``a2a.send``;
- ``methods``: ``a2a.send`` (owner only; the shim's ``a2a_send`` tool); ``cli``: ``remoteclaw a2a card|send``;
- ``config``: the ``a2a`` section (the server's switches, the configured peers).
"""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "a2a",
    start="gateway.a2a.entry:start",
    methods=("gateway.a2a.methods",),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
