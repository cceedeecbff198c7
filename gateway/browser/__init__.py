"""Browser control through a node: ``browser.request`` routed to a node that offers ``browser.proxy``."""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "browser",
    start="gateway.browser.serve:start",
    methods=("gateway.browser.methods",
    "gateway.browser.serve"),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
