"""The desktop: paired nodes' Cua Driver tools for agent runs, their approvals, and trajectories.

``service.py`` calls a node's driver (``desktop.<tool>`` node commands) and keeps recordings, ``tools.py`` reads
each node's tool list, ``trajectories.py`` keeps what was recorded, ``web.py`` shows it, ``chat.py`` is ``/record``.
"""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "desktop",
    start="gateway.desktop.start:start",
    methods=("gateway.desktop.methods",),
    commands=("gateway.desktop.chat",),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
