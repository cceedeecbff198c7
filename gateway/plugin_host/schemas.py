"""Plugins' JSON Schemas (settings, tool inputs, method params): checked and applied with ``jsonschema``, imported
only when a check actually runs.

Why lazy: importing jsonschema (it reads every draft's metaschema) took about 50 ms of a gateway start, and a
start whose plugins are only the bundled ones needs none of it. Their schemas are checked by the test suite
(``tests/gateway/plugin_host/test_bundled_schemas.py``) rather than at every start; a plugin from anywhere else
has its schemas checked when it is found and loaded, and every call's params are checked as before.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SchemaValidator", "schema_error"]


def schema_error(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is not a valid Draft 2020-12 JSON Schema, or None when it is."""
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return None


class SchemaValidator:
    """A Draft 2020-12 validator for one schema, built on its first use."""

    __slots__ = ("_validator", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._validator: Any = None

    def problem(self, data: Any) -> str | None:
        """The first violation as ``at /path: message`` (the wording of every other params error), or None."""
        import jsonschema

        if self._validator is None:
            self._validator = jsonschema.Draft202012Validator(self.schema)
        error = jsonschema.exceptions.best_match(self._validator.iter_errors(data))
        if error is None:
            return None
        path = "/" + "/".join(str(p) for p in error.absolute_path)
        return f"at {path}: {error.message}"
