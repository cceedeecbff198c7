"""Invites: joined when the access rules would let the inviter in (``autoJoin``), declined otherwise.

``autoJoin: allowed`` joins an invite from anyone the account's access keys name (owners, ``allowFrom``,
``groupAllowFrom``, the gateway's ``channels.ownerAllowFrom``), a sender approved by pairing, and, for a DM
invite, anyone while ``dmPolicy`` is pairing or open (so a stranger can ask for a code); ``always`` joins every
invite, ``off`` none. The access keys are read from the live config, since they change without a restart.
"""

from __future__ import annotations

from typing import Any

import nio
import structlog

from channels.matrix.config import MatrixAccountConfig
from channels.matrix.rooms import Rooms
from channels.matrix.session import Session

__all__ = ["Invites"]

log = structlog.get_logger("channels.matrix")


class Invites:
    """One account's answers to invites."""

    def __init__(
        self,
        channel: str,
        session: Session,
        rooms: Rooms,
        settings: MatrixAccountConfig,
        *,
        host: Any,
        access: dict[str, Any],
    ) -> None:
        self.channel = channel
        self._session = session
        self._rooms = rooms
        self._settings = settings
        self._host = host
        self._access = access

    def _access_now(self) -> dict[str, Any]:
        """This account's access keys as the config says now (access rules change without a restart)."""
        cfg = getattr(self._host, "config", None)
        channels = getattr(cfg, "channels", None)
        section = (getattr(channels, "model_extra", None) or {}).get(self.channel) if channels is not None else None
        if not isinstance(section, dict):
            return self._access
        account_id = self._session.account_id
        account = (section.get("accounts") or {}).get(account_id) if account_id != "default" else None
        return {**section, **(account or {})}

    async def _inviter_allowed(self, inviter: str, direct: bool) -> bool:
        mode = self._settings.autoJoin
        if mode != "allowed":
            return mode == "always"
        access = self._access_now()
        owners = [str(x) for x in access.get("ownerAllowFrom") or []]
        global_owners = getattr(getattr(getattr(self._host, "config", None), "channels", None), "ownerAllowFrom", [])
        named = {
            *owners,
            *(str(x) for x in access.get("allowFrom") or []),
            *(str(x) for x in access.get("groupAllowFrom") or []),
        }
        named |= {e.split(":", 1)[1] for e in global_owners if e.startswith("matrix:")}
        if inviter in named or f"matrix:{inviter}" in named:
            return True
        if self._host is not None and await self._host.is_approved(self.channel, inviter):
            return True
        if direct:
            return access.get("dmPolicy", "pairing") in ("pairing", "open")
        return access.get("groupPolicy", "allowlist") == "open"

    async def answer(self, room_id: str, info: Any) -> None:
        """Join or leave the room an invite is for."""
        client = self._session.live()
        account_id = self._session.account_id
        inviter, direct = "", False
        for ev in info.invite_state:  # nio's stripped events: content on the object, not in .source
            if isinstance(ev, nio.InviteMemberEvent) and ev.state_key == self._session.user_id:
                inviter = inviter or ev.sender
                direct = direct or bool((ev.content or {}).get("is_direct"))
        if await self._inviter_allowed(inviter, direct):
            got = await client.join(room_id)
            log.info(
                "matrix invite joined",
                account=account_id,
                room=room_id,
                inviter=inviter,
                ok=isinstance(got, nio.JoinResponse),
            )
            if direct and isinstance(got, nio.JoinResponse):
                self._rooms.remember_dm(inviter, room_id)
        else:
            await client.room_leave(room_id)
            log.info(
                "matrix invite declined",
                account=account_id,
                room=room_id,
                inviter=inviter,
                direct=direct,
                autoJoin=self._settings.autoJoin,
            )
