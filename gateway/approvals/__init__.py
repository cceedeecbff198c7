"""Approvals and questions: an agent run asks its person (may I use this tool? which option?) and waits.

``service.py`` holds the pending requests and decides who wins, ``store.py`` keeps their history and the "allow
always" rules, ``methods.py`` is the RPC surface (OpenClaw's ``exec.approval.*``, ``approval.*``,
``question.*``, and the agent-side ``approvals.ask``/``questions.ask``/``approvals.wait``), ``config.py`` the
``approvals`` section, ``chat.py`` the requests in the chat and ``/approve``. See docs/approvals.md.
"""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "approvals",
    start="gateway.approvals.service:start",
    methods=("gateway.approvals.methods",
    "gateway.approvals.policy"),
    commands=("gateway.approvals.chat",),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
