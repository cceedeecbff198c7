"""Devices and nodes: one store for the keys that connect to the gateway, and the nodes among them.

``operators`` records operator devices (a client key proven at connect, approved by the owner); ``store``
keeps node pairing in the same table (one row per key: its operator approval and its node pairing side by
side), ``policy`` decides which commands may be invoked on a node, ``service`` holds the live node sockets
and carries ``node.invoke`` to them (through Redis when another replica holds the socket), ``methods`` and
``cli`` are the two ways in (``methods``: ``node.*``), and ``requests`` turns a node's ``agent.request`` into a turn.
The canvas, the browser and the desktop (``gateway.canvas``, ``gateway.browser``, ``gateway.desktop``) are the
capabilities that run on nodes. The node host itself is the top-level ``nodes`` package (hence not this name);
docs/nodes.md, "Where the code lives".
"""
