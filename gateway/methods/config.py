"""Config methods: ``config.get``, ``config.schema``, ``config.set``, ``config.patch``, ``config.apply``.

Every write is checked against ``baseHash`` (the hash ``config.get`` returned), validated in full
before anything is written, and then applied: live sections at once, the others by a restart in
place (see ``gateway.config.reload``). Each write goes to the audit log: the sections it changed and, for
``patch`` and ``set``, the change itself with its secrets redacted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, model_validator

from gateway.access import Access, Obj
from gateway.composition.ports import PLUGIN_TOOLS
from gateway.config import Config, ConfigStore, env_overrides
from gateway.config.model import load_json5, secret_paths
from gateway.config.owner_only import owner_only_changes
from gateway.dispatch.dispatcher import ADMIN, READ, CallContext, NoParams, Params, method
from gateway.protocol import Forbidden, InvalidRequest
from gateway.redaction import redact


class ConfigGetParams(Params):
    key: str | None = Field(None, min_length=1, max_length=256, description="Dotted path, e.g. gateway.port")


def _lookup(data: Any, key: str) -> Any:
    node = data
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise InvalidRequest(f"invalid config.get params: at /key: no config key '{key}'")
    return node


@method("config.get", access=Access("config", "read"), params=ConfigGetParams, scope=READ)
async def config_get(p: ConfigGetParams, ctx: CallContext) -> dict[str, Any]:
    """The effective config with secrets redacted, and the hash to pass back as ``baseHash``."""
    store = ctx.config_store
    config = store.redacted()
    out: dict[str, Any] = {"hash": store.hash, "path": str(store.path), "exists": store.path.exists(),
                           "envOverrides": env_overrides()}
    # The running config is always valid; "valid" says whether the file on disk is too (see config_watch).
    out["valid"] = store.file_issue is None
    if store.file_issue is not None:
        out["issues"] = store.file_issue
    if p.key:
        out["key"] = p.key
        out["value"] = _lookup(config, p.key)
    else:
        out["config"] = config
    return out


@method("config.schema", access=Access("config", "read"), scope=READ)
async def config_schema(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """JSON Schema of the config file (with each plugin's settings schema under its entry)."""
    schema = Config.model_json_schema()
    plugins = ctx.services.find(PLUGIN_TOOLS)
    if plugins is not None:
        schema = plugins.extend_schema(schema)
    return {"schema": schema}


def _parse_raw(raw: str, field: str) -> dict[str, Any]:
    try:
        value = load_json5(raw)
    except ValueError as exc:
        raise InvalidRequest(f"invalid params: at /{field}: not valid JSON5 ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidRequest(f"invalid params: at /{field}: must be an object")
    return value


class _WriteParams(Params):
    baseHash: str = Field(min_length=1, max_length=128, description="The hash from config.get")
    raw: str | None = Field(None, max_length=1_000_000, description="The change as JSON5 text")
    note: str | None = Field(None, max_length=500)
    restartDelayMs: int = Field(0, ge=0, le=60_000)


class ConfigPatchParams(_WriteParams):
    patch: dict[str, Any] | None = Field(None, description="RFC 7396 JSON merge patch")

    @model_validator(mode="after")
    def _one_source(self) -> ConfigPatchParams:
        if (self.patch is None) == (self.raw is None):
            raise ValueError("give exactly one of patch or raw")
        return self


class ConfigApplyParams(_WriteParams):
    config: dict[str, Any] | None = Field(None, description="The whole new config")

    @model_validator(mode="after")
    def _one_source(self) -> ConfigApplyParams:
        if (self.config is None) == (self.raw is None):
            raise ValueError("give exactly one of config or raw")
        return self


class ConfigSetParams(Params):
    key: str | None = Field(None, min_length=1, max_length=256, description="Dotted path, e.g. logging.level")
    value: Any = Field(None, description="New value for key; null removes the key")
    raw: str | None = Field(None, max_length=1_000_000, description="The whole config as JSON5 (OpenClaw style)")
    baseHash: str = Field(min_length=1, max_length=128, description="The hash from config.get")

    @model_validator(mode="after")
    def _one_source(self) -> ConfigSetParams:
        if (self.key is None) == (self.raw is None):
            raise ValueError("give exactly one of key (with value) or raw")
        if self.key is not None and "value" not in self.model_fields_set:
            raise ValueError("value is required with key (use null to remove the key)")
        return self


Prepare = Callable[[ConfigStore], tuple[dict[str, Any], Config]]


async def _write(ctx: CallContext, base_hash: str, prepare: Prepare, note: str | None, delay_ms: int, *,
                 change: dict[str, Any] | None = None, target: str | None = None) -> dict[str, Any]:
    """Check the hash, build and validate the new config, then commit and apply it, all under the lock; then
    write to the audit log what changed (``change``: a patch, whose secrets are redacted here)."""
    store = ctx.config_store
    async with store.lock:
        store.check_base_hash(base_hash)
        data, config = prepare(store)
        _refuse_owner_only(ctx, store.config, config)
        result = await ctx.config_changes.apply(data, config, source=ctx.method, note=note,
                                       delay_ms=delay_ms)
    await ctx.audit(ctx.method, target, {"sections": result["changed"], "restart": result["restart"], "note": note,
                                         "patch": redact(change, secret_paths()) if change is not None else None})
    return {"ok": True, "hash": store.hash, "path": str(store.path), **result}


def _refuse_owner_only(ctx: CallContext, old: Config, new: Config) -> None:
    """An admin's write that changes a setting only the owner may (``gateway.config.owner_only``) is refused
    whole, naming the first such path; the owner's and unchanged values pass.

    Raises:
        Forbidden: ``OWNER_ONLY`` naming the config path (``details.paths``: every one the write touched).
    """
    paths = owner_only_changes(old, new)
    if paths and not ctx.access.allows(ctx.caller, "admin", Obj("config", key=paths[0], owner_only=True)):
        raise Forbidden(f"{paths[0]}: only the owner changes this setting (it widens who reaches what, or runs "
                        "code); nothing was written", details={"code": "OWNER_ONLY", "field": paths[0],
                                                               "paths": paths})


@method("config.patch", access=Access("config", "admin"), params=ConfigPatchParams, scope=ADMIN)
async def config_patch(p: ConfigPatchParams, ctx: CallContext) -> dict[str, Any]:
    """Merge-patch the config (RFC 7396); refused whole if the result does not validate."""
    patch = p.patch if p.patch is not None else _parse_raw(p.raw or "", "raw")
    return await _write(ctx, p.baseHash, lambda store: store.prepare_patch(patch), p.note, p.restartDelayMs,
                        change=patch)


@method("config.apply", access=Access("config", "admin"), params=ConfigApplyParams, scope=ADMIN)
async def config_apply(p: ConfigApplyParams, ctx: CallContext) -> dict[str, Any]:
    """Replace the whole config; refused whole if it does not validate."""
    new = p.config if p.config is not None else _parse_raw(p.raw or "", "raw")
    return await _write(ctx, p.baseHash, lambda store: store.prepare_replace(new), p.note, p.restartDelayMs)


@method("config.set", access=Access("config", "admin"), params=ConfigSetParams, scope=ADMIN)
async def config_set(p: ConfigSetParams, ctx: CallContext) -> dict[str, Any]:
    """Set one dotted key (``null`` removes it), or replace the whole config from ``raw``."""
    if p.raw is not None:
        new = _parse_raw(p.raw, "raw")
        return await _write(ctx, p.baseHash, lambda store: store.prepare_replace(new), None, 0)
    key = p.key or ""
    parts = key.split(".")
    if any(not part for part in parts):
        raise InvalidRequest(f"invalid config.set params: at /key: '{key}' is not a dotted path")
    patch: dict[str, Any] = {}
    node = patch
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = p.value
    return await _write(ctx, p.baseHash, lambda store: store.prepare_patch(patch), None, 0, change=patch, target=key)
