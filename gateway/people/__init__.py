"""People: several persons on one gateway, each with a role, their chat identities, their own sessions, budget
and web sign-in.

``store.py`` the tables, ``roles.py`` what each role may do, ``service.py`` the lookups and changes (built in the
core, ``gateway.composition.wiring``: every inbound message asks it who is talking), ``chat.py`` the chat
commands (``/whoami``, ``/link``, ``/login``), ``methods.py`` the ``people.*`` methods, ``cli.py`` ``remoteclaw
people``, ``config.py`` the ``people`` section. See docs/people.md.
"""
