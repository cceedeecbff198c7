"""The capability's entry: the model gateway's service, its ``/model`` route and its clean-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
from starlette.routing import Mount

from gateway.composition.ports import MODEL_GATEWAY
from gateway.credentials.proxy import MOUNT, ModelRoute
from gateway.credentials.service import ModelGateway
from gateway.credentials.store import SharedStandIns
from gateway.store.errors import StoreError

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost

__all__ = ["start"]

log = structlog.get_logger("gateway.credentials")


async def start(host: CapabilityHost) -> None:
    """Capability entry: serve ``/model/...`` and provide the model gateway to the executor."""
    shared = SharedStandIns(host.db, host.replica_id)
    try:
        await shared.drop_own()  # the node turns of this replica's previous process are over
    except StoreError as exc:
        log.warning("the stand-ins this replica shared before its restart are left to expire", error=str(exc))
    models = ModelGateway(host.config_store, host.db, host.people, host.listen, shared)
    host.services.provide(MODEL_GATEWAY, models)
    host.add_route(Mount(MOUNT, app=ModelRoute(models)))
    host.on_stop(models.close)
