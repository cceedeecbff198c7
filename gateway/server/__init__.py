"""The server and its connections: the Starlette app and WebSocket driver (``app``), the serve/restart loop
(``serve``), the ``connect`` exchange (``handshake``) and its checks (``auth``, ``origins``, ``preauth``), each
client's send side (``connection``) and the limits over all of them (``send_budget``, ``fanout``), presence and
session event routing, and the process's own health (``loop_watch``, ``heap_trim``). The frames themselves are
``gateway.protocol``."""
