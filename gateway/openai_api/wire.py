"""The request bodies of the API, read as OpenAI defines them and checked before anything is stored.

Only what the gateway uses is read: the agent (``model``), the caller's latest words and files (the last ``user``
message of ``messages``, the last user item of ``input``; images and files as base64 data URLs, never by address
or Files API id), streaming, the conversation (``user``, ``previous_response_id``). The many sampling fields
OpenAI clients send (``temperature``, ``max_tokens``, ``tools``...) are accepted and ignored: the agent's CLI
chooses its own (docs/openai-api.md lists them). Every refusal names the field as OpenAI does
(``messages[2].content[0].type``), and nothing is stored before the body has passed.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.openai_api.errors import ApiError
from gateway.runs.chat_methods import MAX_UPLOAD_BYTES, uploads_refused

__all__ = ["ChatRequest", "File", "ResponsesRequest", "Turn", "chat_turn", "parse", "responses_turn"]

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
class File:
    """A file the caller's message carries (an image or a file part), decoded: it becomes one of the turn's
    ``chat.send`` attachments."""

    name: str
    mime_type: str
    data: bytes
    param: str
    """The field it was given in (``messages[0].content[1].image_url.url``): what a refusal names."""


@dataclass(frozen=True, slots=True)
class Turn:
    """What a request asks of the agent: its words, its files, and how it wants the answer."""

    agent: str
    text: str
    stream: bool
    user: str | None
    files: tuple[File, ...] = ()


@dataclass(frozen=True, slots=True)
class Kinds:
    """The content part types of one API: its text parts, its image part and its file part."""

    text: tuple[str, ...]
    image: str
    file: str


CHAT_PARTS = Kinds(("text",), "image_url", "file")
RESPONSES_PARTS = Kinds(("input_text", "text"), "input_image", "input_file")


def _refuse(at: str, message: str, code: str = "invalid_value") -> ApiError:
    return ApiError(400, f"Invalid value for '{at}': {message}", param=at, code=code)


def _decoded(value: Any, at: str, *, bare: bool, what: str) -> tuple[str, bytes]:
    """A file's bytes given as a data URL (``data:<type>;base64,<bytes>``), or with ``bare`` as base64 alone: its
    type (empty if not said) and bytes. An address is refused: the gateway fetches nothing a caller names (it
    would reach what the caller cannot: this machine's network, a cloud's metadata service)."""
    if not isinstance(value, str):
        raise _refuse(at, "expected a string.", "invalid_type")
    if value.startswith(("http://", "https://")) or "://" in value[:16]:
        raise _refuse(at, f"{what} by URL is not accepted (the gateway fetches nothing); send its bytes as a data "
                          "URL: data:<type>;base64,<bytes>.", "unsupported_value")
    kind, payload = "", value
    if value.startswith("data:"):
        header, comma, payload = value[5:].partition(",")
        if not comma or not header.endswith(";base64"):
            raise _refuse(at, "expected a base64 data URL: data:<type>;base64,<bytes>.")
        kind = header.split(";", 1)[0].strip().lower()
    elif not bare:
        raise _refuse(at, "expected a data URL: data:<type>;base64,<bytes>.")
    if len(payload) > MAX_UPLOAD_BYTES * 4 // 3 + 4:
        raise _refuse(at, f"larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB.", "file_too_large")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise _refuse(at, "the file's bytes are not base64.") from None
    if not data:
        raise _refuse(at, "the file is empty.")
    return kind, data


def _named(given: Any, kind: str, fallback: str, at: str) -> str:
    if given is None:
        return fallback + (mimetypes.guess_extension(kind) or "" if kind else "")
    if not isinstance(given, str) or not given.strip():
        raise _refuse(at, "expected a file name.", "invalid_type")
    return given


def _not_by_id(part: dict[str, Any], at: str, keys: tuple[str, ...], instead: str) -> None:
    """A file named by the Files API's id, or by address, is not taken: the gateway holds no such file, and fetches
    nothing."""
    for key in keys:
        if part.get(key) is not None:
            raise _refuse(f"{at}.{key}", f"{key} is not accepted here (the gateway keeps no OpenAI files and fetches "
                                         f"nothing); send the bytes in {instead} as a data URL.", "unsupported_value")


def _file_of(part: dict[str, Any], kind: str, at: str, kinds: Kinds) -> File:
    """The file of an image or file part, in the shapes of the API ``kinds`` belongs to."""
    if kind == kinds.image and kinds is CHAT_PARTS:  # {"image_url": {"url": "data:..."}}
        image = part.get("image_url")
        if not isinstance(image, dict):
            raise _refuse(f"{at}.image_url", "expected an object with a url.", "invalid_type")
        where = f"{at}.image_url.url"
        mime, data = _decoded(image.get("url"), where, bare=False, what="an image")
        return File(_named(None, mime, "image", where), mime, data, where)
    if kind == kinds.image:  # Responses: {"image_url": "data:...", "file_id": ...}
        _not_by_id(part, at, ("file_id",), "image_url")
        where = f"{at}.image_url"
        mime, data = _decoded(part.get("image_url"), where, bare=False, what="an image")
        return File(_named(None, mime, "image", where), mime, data, where)
    body = part.get("file") if kinds is CHAT_PARTS else part  # chat: {"file": {...}}; Responses: the part itself
    base = f"{at}.file" if kinds is CHAT_PARTS else at
    if not isinstance(body, dict):
        raise _refuse(base, "expected an object with file_data.", "invalid_type")
    _not_by_id(body, base, ("file_id", "file_url"), "file_data")
    where = f"{base}.file_data"
    if body.get("file_data") is None:
        raise _refuse(where, "is required: the file's bytes, as a data URL (data:<type>;base64,<bytes>).")
    mime, data = _decoded(body.get("file_data"), where, bare=True, what="a file")
    name = _named(body.get("filename"), mime, "file", f"{base}.filename")
    return File(name, mime or mimetypes.guess_type(name)[0] or "application/octet-stream", data, where)


def _content(content: Any, where: str, kinds: Kinds) -> tuple[str, tuple[File, ...]]:
    """The text and files of a message's ``content``: a string, or a list of text, image and file parts."""
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        raise ApiError(400, f"Invalid value for '{where}': expected a string or an array of content parts.",
                       param=where, code="invalid_type")
    pieces: list[str] = []
    files: list[File] = []
    for j, part in enumerate(content):
        at = f"{where}[{j}]"
        if not isinstance(part, dict):
            raise ApiError(400, f"Invalid value for '{at}': expected a content part object.", param=at,
                           code="invalid_type")
        kind = part.get("type")
        if kind in (kinds.image, kinds.file):
            files.append(_file_of(part, str(kind), at, kinds))
            continue
        if kind not in kinds.text:
            taken = ", ".join((*kinds.text, kinds.image, kinds.file))
            raise ApiError(400, f"Invalid value for '{at}.type': only text, image and file parts ({taken}) are "
                                f"supported, got {kind!r}.", param=f"{at}.type", code="invalid_value")
        text = part.get("text")
        if not isinstance(text, str):
            raise ApiError(400, f"Invalid value for '{at}.text': expected a string.", param=f"{at}.text",
                           code="invalid_type")
        pieces.append(text)
    refused = uploads_refused([len(f.data) for f in files])
    if refused is not None:
        at = where if refused.index is None else files[refused.index].param
        raise _refuse(at, refused.reason + ".", "file_too_large" if refused.index is not None else "invalid_value")
    return "\n".join(pieces), tuple(files)


def _checked(text: str, where: str, files: tuple[File, ...] = ()) -> str:
    if not text.strip() and not files:
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
            text, files = _content(message.content, where, CHAT_PARTS)
            return Turn(req.model, _checked(text, where, files), req.stream, req.user, files)
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
            text, files = _content(item.get("content"), where, RESPONSES_PARTS)
            return Turn(req.model, _checked(text, where, files), req.stream, req.user, files)
    raise ApiError(400, "Invalid value for 'input': there is no message with role 'user'.", param="input",
                   code="invalid_value")
