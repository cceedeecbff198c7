"""The ``api`` config section: the HTTP APIs other programs call, ``api.openai`` first (read by
``gateway.config.model``). Owner-only (``gateway.config.owner_only``): opening a door widens who reaches what."""

from __future__ import annotations

from pydantic import Field

from gateway.config.sections import Section

__all__ = ["ApiConfig", "OpenAiApiConfig"]


class OpenAiApiConfig(Section):
    """The OpenAI-compatible API at ``/v1`` (docs/openai-api.md). Off by default."""

    enabled: bool = Field(False, description="Serve /v1/models, /v1/chat/completions and /v1/responses.")
    requestsPerMinute: float = Field(60, ge=0, description="Requests one caller may make per minute, sustained "
                                                            "(0: no limit).")
    burst: int = Field(20, ge=1, description="Requests one caller may make at once after a quiet while.")
    waitSeconds: float = Field(600, gt=0, le=24 * 3600,
                               description="How long a request waits for its turn; past it the answer says the "
                                           "turn is still running (or waiting for an approval), and it goes on.")
    approvalWaitSeconds: float = Field(120, gt=0, le=24 * 3600,
                                       description="How long a request waits while its turn waits for an approval "
                                                   "or a question; past it the answer says so (the turn goes on).")
    stopOnDisconnect: bool = Field(True, description="A streamed request whose client goes away before the end (a "
                                                     "stop button) stops its turn, as OpenAI's API stops "
                                                     "generating; false lets the turn finish into its session.")
    maxRequestBytes: int = Field(4 * 1024 * 1024, ge=1024, description="Largest request body accepted.")
    conversationHeader: str = Field("X-Remoteclaw-Conversation", min_length=1, max_length=64,
                                    pattern=r"^[A-Za-z0-9-]+$",
                                    description="The request header that names the caller's conversation.")


class ApiConfig(Section):
    """HTTP APIs for other programs."""

    openai: OpenAiApiConfig = OpenAiApiConfig()
