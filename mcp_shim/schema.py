"""JSON Schema for tool inputs, as plain dicts, and a small validator for the subset we use.

The shim starts for every agent run, so schemas are literal dicts (no pydantic), and arguments are
checked here before any gateway call: a model that sends ``{"limit": "ten"}`` gets an error naming
the field, in the same ``at /field: must be ...`` words the gateway uses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any

    Schema = dict[str, Any]


__all__ = [
    "any_value",
    "array",
    "boolean",
    "free_object",
    "integer",
    "number",
    "obj",
    "string",
    "validate",
]



def obj(properties: dict[str, Schema] | None = None, required: tuple[str, ...] = ()) -> Schema:
    """A closed object: unknown keys are refused so a misspelled argument is reported, not ignored."""
    schema: Schema = {"type": "object", "properties": properties or {}, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def string(description: str, *, enum: tuple[str, ...] = (), min_length: int | None = 1,
           max_length: int | None = None) -> Schema:
    schema: Schema = {"type": "string", "description": description}
    if enum:
        schema["enum"] = list(enum)
    elif min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


def integer(description: str, *, minimum: int | None = None, maximum: int | None = None) -> Schema:
    schema: Schema = {"type": "integer", "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def number(description: str, *, minimum: float | None = None, maximum: float | None = None) -> Schema:
    schema: Schema = {"type": "number", "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def boolean(description: str) -> Schema:
    return {"type": "boolean", "description": description}


def array(items: Schema, description: str, *, min_items: int | None = 1) -> Schema:
    schema: Schema = {"type": "array", "items": items, "description": description}
    if min_items is not None:
        schema["minItems"] = min_items
    return schema


def free_object(description: str) -> Schema:
    """An object whose shape belongs to the gateway (a cron job, a config patch)."""
    return {"type": "object", "description": description, "additionalProperties": True}


def any_value(description: str) -> Schema:
    return {"description": description}


# -- validation ----------------------------------------------------------------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


def _where(path: str) -> str:
    return path or "root"


def validate(schema: Schema, value: Any, path: str = "") -> str | None:
    """Return the first problem with ``value`` (``"at /limit: must be integer"``), or ``None``."""
    kind = schema.get("type")
    if isinstance(kind, str) and not _type_ok(kind, value):
        return f"at {_where(path)}: must be {kind}"
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        return f"at {_where(path)}: must be one of {', '.join(map(repr, enum))}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"at {_where(path)}: must not be empty"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"at {_where(path)}: must be at most {schema['maxLength']} characters"
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"at {_where(path)}: must be >= {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"at {_where(path)}: must be <= {schema['maximum']}"
    elif isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return f"at {_where(path)}: must have at least {schema['minItems']} item(s)"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"at {_where(path)}: must have at most {schema['maxItems']} item(s)"
        items = schema.get("items")
        if items:
            for i, item in enumerate(value):
                problem = validate(items, item, f"{path}/{i}")
                if problem:
                    return problem
    elif isinstance(value, dict) and kind == "object":
        props: dict[str, Schema] = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                return f"at {_where(path)}: must have required property '{name}'"
        for name, item in value.items():
            sub = props.get(name)
            if sub is None:
                if schema.get("additionalProperties") is False:
                    return f"at {_where(path)}: unexpected property '{name}'"
                continue
            problem = validate(sub, item, f"{path}/{name}")
            if problem:
                return problem
    return None
