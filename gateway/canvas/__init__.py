"""Canvas: the A2UI host page served to nodes, and the checks applied to what agents push to it."""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "canvas",
    start="gateway.canvas.checks:start",
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
