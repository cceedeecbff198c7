"""The ``approvals`` config section: how long a request waits, and OpenClaw's ``approvals.exec`` forwarding of
tool-use requests to other chats (read by ``gateway.config.model``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from gateway.config.sections import Section

__all__ = ["ApprovalForwarding", "ApprovalTarget", "ApprovalsConfig"]


class ApprovalTarget(Section):
    """A chat that approval requests are sent to besides (or instead of) the session's own chat."""

    channel: str = Field(min_length=1, description="A configured channel: telegram, discord, …")
    to: str = Field(min_length=1, description="The chat there, as message.send takes it.")
    accountId: str | None = Field(None, min_length=1, description="The channel account; unset: its default one.")
    threadId: str | int | None = Field(None, description="A thread or topic inside that chat.")


class ApprovalForwarding(Section):
    """OpenClaw's ``approvals.exec``: where tool-use approval requests are told (questions stay in the session)."""

    enabled: bool = Field(False, description="Off: every request goes to the session's own chat only.")
    mode: Literal["session", "targets", "both"] = Field("session", description="session: the session's chat; "
                                                         "targets: only the chats in targets; both: all of them.")
    agentFilter: list[str] | None = Field(None, description="Only requests of these agents are routed so; "
                                          "the others go to their session's chat.")
    sessionFilter: list[str] | None = Field(None, description="Only requests of sessions whose key contains one "
                                            "of these (or matches it as a regular expression).")
    targets: list[ApprovalTarget] = Field(default_factory=list, validate_default=True)

    @field_validator("targets")
    @classmethod
    def _targets_for_mode(cls, value: list[ApprovalTarget], info: ValidationInfo) -> list[ApprovalTarget]:
        mode = info.data.get("mode")
        if info.data.get("enabled") and mode in ("targets", "both") and not value:
            raise ValueError(f"mode {mode!r} needs at least one target ({{channel, to}})")
        return value


class ApprovalsConfig(Section):
    exec: ApprovalForwarding = Field(default_factory=ApprovalForwarding, description="Routing of tool-use "
                                     "approval requests to other chats (OpenClaw's approvals.exec).")
    timeoutSeconds: int = Field(600, ge=5, le=86_400, description="A tool use nobody decides within this long "
                                "is denied (reason: timeout).")
    questionTimeoutSeconds: int = Field(900, ge=5, le=86_400, description="An ask_user question nobody answers "
                                        "within this long returns no_answer (unless the agent asks for less).")
    keepDays: int = Field(30, ge=1, description="Decided requests older than this are pruned from the history.")
