"""The remoteclaw node host: a small process that pairs with a gateway and runs commands for it.

It needs only ``websockets``, ``orjson`` and ``cryptography`` (the ``node`` extra), so it runs on a machine
that has nothing else of remoteclaw: ``remoteclaw-node run --host H --port P`` (or ``remoteclaw node run``).
``identity`` is its Ed25519 key, ``state`` where it keeps things, ``approvals`` the local allowlist of what
``system.run`` may execute, ``commands`` the commands it serves, ``host`` the connection loop.
"""
