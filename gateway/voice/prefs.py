"""The owner's voice preferences (spoken replies on or off, the provider), kept in the database.

Set through ``tts.enable``, ``tts.disable`` and ``tts.setProvider``; they win over ``messages.tts`` in the
config and are shared by every replica on the same database. Unset (null) means "as the config says".
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import BigInteger, Boolean, String, select
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store import Database
from gateway.store.base import Base

__all__ = ["VoicePrefs", "VoicePrefsRow", "load", "save"]

SCOPE = "tts"


class VoicePrefsRow(Base):
    __tablename__ = "voice_prefs"

    scope: Mapped[str] = mapped_column(String(32), primary_key=True)
    enabled: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    provider: Mapped[str | None] = mapped_column(String(32), nullable=True)
    updated_at: Mapped[int] = mapped_column(BigInteger)


@dataclass(frozen=True, slots=True)
class VoicePrefs:
    enabled: bool | None = None
    provider: str | None = None


async def load(db: Database) -> VoicePrefs:
    async with db.session() as s:
        row = (await s.execute(select(VoicePrefsRow).where(VoicePrefsRow.scope == SCOPE))).scalar_one_or_none()
    return VoicePrefs(row.enabled, row.provider) if row is not None else VoicePrefs()


async def save(db: Database, *, enabled: bool | None = None, provider: str | None = None) -> VoicePrefs:
    """Change the given fields (None leaves one as it is)."""
    async with db.session() as s:
        row = (await s.execute(select(VoicePrefsRow).where(VoicePrefsRow.scope == SCOPE))).scalar_one_or_none()
        if row is None:
            row = VoicePrefsRow(scope=SCOPE, updated_at=0)
            s.add(row)
        if enabled is not None:
            row.enabled = enabled
        if provider is not None:
            row.provider = provider
        row.updated_at = int(time.time() * 1000)
        return VoicePrefs(row.enabled, row.provider)
