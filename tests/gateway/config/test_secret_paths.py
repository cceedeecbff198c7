"""The config's secret paths, read from the models' fields at start, are the ones its JSON Schema marks."""

from __future__ import annotations

from gateway.config.model import Config, _schema_secret_paths
from gateway.redaction import schema_secret_paths


def test_the_fields_mark_the_same_secrets_as_the_schema() -> None:
    from_fields = _schema_secret_paths()
    assert from_fields == schema_secret_paths(Config.model_json_schema())
    assert {("gateway", "auth", "token"), ("channels", "telegram", "accounts", "*", "botToken"),
            ("messages", "tts", "openai", "apiKey")} <= from_fields, from_fields
