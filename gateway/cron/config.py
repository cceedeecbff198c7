"""The ``cron`` config section, and the per-agent ``heartbeat`` one (``heartbeat.py`` turns it into jobs); read by
``gateway.config.model``."""

from __future__ import annotations

from pydantic import Field, field_validator

from gateway.config.sections import Section

__all__ = ["ActiveHours", "CronConfig", "HeartbeatConfig"]


class ActiveHours(Section):
    start: str = Field("08:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, local to tz")
    end: str = Field("22:00", pattern=r"^([01]\d|2[0-4]):[0-5]\d$", description="HH:MM (24:00 = midnight)")
    tz: str = Field("UTC", description="IANA time zone of start and end, e.g. Europe/Berlin")

    @field_validator("tz")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value


class HeartbeatConfig(Section):
    every: str = Field(pattern=r"^\d+(\.\d+)?\s*(s|m|h|d)$", description="How often, e.g. 30m, 2h, 1d.")
    prompt: str = Field("Heartbeat: check whether anything needs doing (reminders, follow-ups, things you were "
                        "asked to watch). Do it, then call heartbeat_report saying whether anything was done.",
                        description="What the agent is asked on each heartbeat.")
    activeHours: ActiveHours | None = Field(None, description="Outside these hours no heartbeat runs.")
    deliver: bool = Field(True, description="Announce the heartbeat's reply to the session's last chat route, "
                                            "unless its heartbeat_report says nothing was done.")


class CronConfig(Section):
    enabled: bool = Field(True, description="Run scheduled jobs on this gateway (jobs are kept either way).")
    maxConcurrentRuns: int = Field(2, ge=1, le=64, description="Jobs this replica runs at once.")
    failureAlertAfter: int = Field(3, ge=1, description="Consecutive failures before the owner is told.")
    keepRunsDays: int = Field(30, ge=1, description="Run history older than this is pruned.")
    keepRunsPerJob: int = Field(200, ge=1, description="At most this many history rows per job.")
    webhookAllowPrivate: bool = Field(False, description="Let webhook deliveries reach private and loopback "
                                      "addresses (a LAN service); off, only public addresses are posted to.")
