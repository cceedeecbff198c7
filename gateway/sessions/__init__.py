"""Sessions: a conversation's key, row and transcript, and the methods and events around them.

``service`` (keys and the sessions service), ``store`` (the session, transcript and run rows), ``methods``
(``sessions.*``, ``agents.list``), ``views`` (the read-only views the Control UI opens), ``subscriptions`` and
``events`` (``sessions.subscribe`` and the events it delivers).
"""
