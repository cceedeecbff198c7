"""The request bodies of the API, read as OpenAI defines them and checked before anything is stored.

Only what the gateway uses is read: the agent (``model``), the caller's latest words (the last ``user`` message
of ``messages``, the last user item of ``input``), streaming, the conversation (``user``,
``previous_response_id``). The many sampling fields OpenAI clients send (``temperature``, ``max_tokens``,
``tools``...) are accepted and ignored: the agent's CLI chooses its own (docs/openai-api.md lists them). Every
refusal names the field as OpenAI does (``messages[2].content[0].type``), and nothing is stored before the body
has passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.openai_api.errors import ApiError

__all__ = ["ChatRequest", "ResponsesRequest", "Turn", "chat_turn", "parse", "responses_turn"]

MAX_TEXT = 200_000
"""The longest message a turn takes (what ``chat.send`` accepts)."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class StreamOptions(_Body):
    include_usage: bool = False


class ChatMessage(_Body):
    role: str = Field(min_length=1, max_length=32)
    content: Any = None


class ChatRequest(_Body):
    model: str = Field(min_length=1, max_length=128)
    messages: list[ChatMessage] = Field(min_length=1, max_length=10_000)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(None, max_length=256)
    n: int | None = Field(None, ge=1, le=1)


class ResponsesRequest(_Body):
    model: str = Field(min_length=1, max_length=128)
    input: str | list[Any] = Field(min_length=1)
    stream: bool = False
    previous_response_id: str | None = Field(None, min_length=1, max_length=128)
    user: str | None = Field(None, max_length=256)
    instructions: str | None = None


def _param(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as OpenAI names a field: ``messages[0].role``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "list[any]") or "[" in str(part):
            break  # a union member's name, not a field
        else:
            out += f".{part}" if out else str(part)
    return out or "body"


def parse(model: type[_Body], body: bytes) -> Any:
    """The body as ``model``, or ``ApiError`` 400 naming the first field that is wrong."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ApiError(400, "We could not parse the JSON body of your request: it is not JSON.",
                       param=None, code="invalid_json") from None
    if not isinstance(data, dict):
        raise ApiError(400, "The body of your request must be a JSON object.", param=None, code="invalid_json")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        param = _param(tuple(first["loc"]))
        problem = "is required" if first["type"] == "missing" else first["msg"][0].lower() + first["msg"][1:]
        raise ApiError(400, f"Invalid value for '{param}': {problem}.", param=param,
                       code="missing_required_parameter" if first["type"] == "missing" else "invalid_value") \
            from None


@dataclass(frozen=True, slots=True)
class Turn:
    """What a request asks of the agent: its words, and how it wants the answer."""

    agent: str
    text: str
    stream: bool
    user: str | None


def _text(content: Any, where: str, kinds: tuple[str, ...]) -> str:
    """The text of a message's ``content``: a string, or a list of text parts (``kinds``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ApiError(400, f"Invalid value for '{where}': expected a string or an array of content parts.",
                       param=where, code="invalid_type")
    pieces: list[str] = []
    for j, part in enumerate(content):
        at = f"{where}[{j}]"
        if not isinstance(part, dict):
            raise ApiError(400, f"Invalid value for '{at}': expected a content part object.", param=at,
                           code="invalid_type")
        kind = part.get("type")
        if kind not in kinds:
            raise ApiError(400, f"Invalid value for '{at}.type': only text parts ({', '.join(kinds)}) are "
                                f"supported, got {kind!r}.", param=f"{at}.type", code="invalid_value")
        text = part.get("text")
        if not isinstance(text, str):
            raise ApiError(400, f"Invalid value for '{at}.text': expected a string.", param=f"{at}.text",
                           code="invalid_type")
        pieces.append(text)
    return "\n".join(pieces)


def _checked(text: str, where: str) -> str:
    if not text.strip():
        raise ApiError(400, f"Invalid value for '{where}': the message is empty.", param=where,
                       code="invalid_value")
    if len(text) > MAX_TEXT:
        raise ApiError(400, f"Invalid value for '{where}': longer than {MAX_TEXT} characters.", param=where,
                       code="string_above_max_length")
    return text


def chat_turn(req: ChatRequest) -> Turn:
    """The turn a chat completion asks for: the last ``user`` message (the session keeps the rest)."""
    for i in range(len(req.messages) - 1, -1, -1):
        message = req.messages[i]
        if message.role == "user":
            where = f"messages[{i}].content"
            return Turn(req.model, _checked(_text(message.content, where, ("text",)), where), req.stream,
                        req.user)
    raise ApiError(400, "Invalid value for 'messages': there is no message with role 'user'.", param="messages",
                   code="invalid_value")


def responses_turn(req: ResponsesRequest) -> Turn:
    """The turn a response asks for: ``input`` as a string, else its last user message item."""
    if isinstance(req.input, str):
        return Turn(req.model, _checked(req.input, "input"), req.stream, req.user)
    for i in range(len(req.input) - 1, -1, -1):
        item = req.input[i]
        at = f"input[{i}]"
        if not isinstance(item, dict):
            raise ApiError(400, f"Invalid value for '{at}': expected an input item object.", param=at,
                           code="invalid_type")
        kind = item.get("type", "message")
        if kind != "message":
            raise ApiError(400, f"Invalid value for '{at}.type': only message items are supported, got {kind!r}.",
                           param=f"{at}.type", code="invalid_value")
        if item.get("role") == "user":
            where = f"{at}.content"
            text = _text(item.get("content"), where, ("input_text", "text"))
            return Turn(req.model, _checked(text, where), req.stream, req.user)
    raise ApiError(400, "Invalid value for 'input': there is no message with role 'user'.", param="input",
                   code="invalid_value")
