"""The gateway's configuration, one concept a module:

- ``model``: the pydantic model of the whole config, validation with errors that name the field and the
  environment variable, and ``ConfigStore`` (the file: JSON5, env overrides, baseHash, atomic writes, backup);
- ``sections``/``channels``: the section base classes and the ``channels`` section's models;
- ``reload``: applying a committed change live or by restarting in place, and the listeners of changes;
- ``watch``: noticing hand edits of the file (with rollback to the last good config).

The names most code needs are re-exported here, lazily: ``from gateway.config import Config, ConfigStore``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.config.model import (
        REDACTED,
        AgentConfig,
        ChannelAccessConfig,
        Config,
        ConfigError,
        ConfigStore,
        ProjectConfig,
        env_overrides,
        hash_data,
        merge_patch,
        redact,
        secret_values,
        validate,
    )

__all__ = [
    "REDACTED",
    "AgentConfig",
    "ChannelAccessConfig",
    "Config",
    "ConfigError",
    "ConfigStore",
    "ProjectConfig",
    "env_overrides",
    "hash_data",
    "merge_patch",
    "redact",
    "secret_values",
    "validate",
]


def __getattr__(name: str) -> Any:
    """The names above, imported on first use. Every section model (``gateway.voice.config``,
    ``gateway.cron.config``...) builds on ``gateway.config.sections``, and the model imports those sections: were the
    model imported with this package, importing a capability's config section before the model would find itself half
    made."""
    if name in __all__:
        from gateway.config import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
