"""Cron: scheduled agent turns and system events, stored in our own tables, fired once across replicas.

``schedule.py`` says when, ``store.py`` keeps jobs and their run history, ``service.py`` sleeps until
the next due job, claims it and runs it, ``delivery.py`` takes the result to a chat or a webhook,
``heartbeat.py`` keeps each agent's periodic heartbeat job in step with the config, ``methods.py`` is
the ``cron.*`` RPC surface, ``cli.py`` the ``remoteclaw cron`` command, and ``config.py`` the ``cron`` section and
an agent's ``heartbeat``.
"""

from gateway.composition.capabilities import Capability

CAPABILITY = Capability(
    "cron",
    start="gateway.cron.service:start",
    methods=("gateway.cron.methods",),
)
"""What this capability adds to the gateway (``gateway.composition.capabilities``)."""
