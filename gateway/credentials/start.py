"""The capability's entry: the model gateway's service, its ``/model`` route and its clean-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import Mount

from gateway.composition.ports import MODEL_GATEWAY
from gateway.credentials.proxy import MOUNT, ModelRoute
from gateway.credentials.service import ModelGateway

if TYPE_CHECKING:
    from gateway.composition.hosts import CapabilityHost

__all__ = ["start"]


async def start(host: CapabilityHost) -> None:
    """Capability entry: serve ``/model/...`` and provide the model gateway to the executor."""
    models = ModelGateway(host.config_store, host.db, host.people, host.listen)
    host.services.provide(MODEL_GATEWAY, models)
    host.add_route(Mount(MOUNT, app=ModelRoute(models)))
    host.on_stop(models.close)
