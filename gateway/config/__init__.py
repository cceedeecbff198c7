"""The gateway's configuration, one concept a module:

- ``model``: the pydantic model of the whole config, validation with errors that name the field and the
  environment variable, and ``ConfigStore`` (the file: JSON5, env overrides, baseHash, atomic writes, backup);
- ``sections``/``channels``: the section base classes and the ``channels`` section's models;
- ``reload``: applying a committed change live or by restarting in place, and the listeners of changes;
- ``watch``: noticing hand edits of the file (with rollback to the last good config).

The names most code needs are re-exported here: ``from gateway.config import Config, ConfigStore``.
"""

from __future__ import annotations

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
