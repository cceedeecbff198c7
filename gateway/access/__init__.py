"""The one authorization model: who may do what to which object, decided in one place.

Every door asks it: the WebSocket methods (each ``@method`` declares the object it acts on, ``Access``), the
tools of a run (through its run token, which makes it a ``Principal`` of kind ``run``), ``/mcp``, chat commands,
HTTP routes and the event fan-out. A door with a check of its own, or none, is a defect.

- ``principals``: who calls (``Principal``, built from the connection's ``Caller``).
- ``objects``: what is acted on (``Obj``) and the declaration a method carries (``Access``).
- ``policy``: ``may(principal, action, obj)``, the decision, and ``require``, its refusal.
- ``doors``: ``AccessControl``, which finds a declared object in a request's params and asks ``may``; and which
  events a principal receives.
"""

from gateway.access.objects import ACTIONS, KINDS, Access, Obj
from gateway.access.policy import may, require
from gateway.access.principals import Principal, is_owner, principal_of

__all__ = ["ACTIONS", "KINDS", "Access", "Obj", "Principal", "is_owner", "may", "principal_of", "require"]
