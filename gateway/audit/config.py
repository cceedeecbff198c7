"""The ``audit`` config section: how long the audit log keeps its rows (read by ``gateway.config.model``)."""

from __future__ import annotations

from pydantic import Field

from gateway.config.sections import Section

__all__ = ["AuditConfig"]


class AuditConfig(Section):
    retentionDays: int = Field(90, ge=1, le=36_500, description="Audit events older than this many days are "
                               "deleted (at start, once a day, and when this changes).")
