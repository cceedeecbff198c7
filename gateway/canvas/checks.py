"""Canvas on the gateway: serve the canvas host page, and check A2UI before it goes to a node.

Canvas commands run on nodes (``node.invoke``); the gateway's part is the page a node's canvas loads to
draw A2UI, and a strict check of every ``canvas.a2ui.push`` / ``canvas.a2ui.pushJSONL`` so that a bad
line is refused here, naming its number and field, and no half of a batch is ever drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.routing import Route

from gateway.canvas import a2ui
from gateway.canvas.page import PATH, canvas_page
from gateway.protocol import InvalidRequest

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost

__all__ = ["check_push", "check_push_jsonl", "start"]


def _checker(field: str, kind: type, what: str, check: Callable[[Any], object]) -> Callable[[Any], None]:
    """A ``node.invoke`` params check: ``params[field]`` must be a ``kind`` whose A2UI passes ``check``."""
    def run(params: Any) -> None:
        value = params.get(field) if isinstance(params, dict) else None
        if not isinstance(value, kind):
            raise InvalidRequest(f"params.{field} must be {what}", details={"code": "A2UI_INVALID", "field": field})
        try:
            check(value)
        except a2ui.A2UIError as err:
            raise InvalidRequest(str(err), details={"code": "A2UI_INVALID", "line": err.line,
                                                    "field": err.field}) from None
    return run


check_push = _checker("messages", list, "a list of A2UI messages", a2ui.validate_messages)
check_push_jsonl = _checker("jsonl", str, "a string of A2UI messages, one per line", a2ui.parse_jsonl)


async def start(host: CapabilityHost) -> None:
    """Capability entry: the page route, and the A2UI checks on the node service's calls."""
    host.add_route(Route(PATH, canvas_page))
    host.add_route(Route(PATH.rstrip("/"), canvas_page))
    if host.nodes is not None:
        host.nodes.param_checks["canvas.a2ui.push"] = check_push
        host.nodes.param_checks["canvas.a2ui.pushJSONL"] = check_push_jsonl
