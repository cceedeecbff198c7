"""The audit log: who did what to the config, pairing, devices and nodes, approvals and tokens.

``store.py`` is the ``audit_events`` table, ``actors.py`` says who a caller is in one short string,
``service.py`` records (never failing the action recorded), lists and prunes after ``audit.retentionDays``,
``methods.py`` is ``audit.log.list``, ``cli.py`` the ``remoteclaw audit`` command, ``config.py`` the ``audit``
section. Other packages record through ``gateway.composition.ports.AUDIT`` (``ctx.audit(...)`` in a handler),
so they never import this one. See docs/audit.md.
"""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "audit",
    start="gateway.audit.service:start",
    methods=("gateway.audit.methods",),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
