"""The ``people`` config section (read by ``gateway.config.model``); the people themselves live in the database."""

from __future__ import annotations

from pydantic import Field

from gateway.config.sections import Section

__all__ = ["PeopleConfig"]


class PeopleConfig(Section):
    """How far an admin reaches, and how a new person's web sign-in is made."""

    adminsReadTranscripts: bool = Field(False, description="Admins see every session and transcript, as the owner "
                                        "does. Off: an admin administers people and config, and reads only their "
                                        "own conversations.")
    maxCostPerDay: float | None = Field(None, gt=0, description="US dollars the turns of everyone on record "
                                        "(but the owner) may spend together per UTC day: the team's budget, on top "
                                        "of each person's own.")
    signinUrl: str | None = Field(None, description="Where /login links point (the web chat's address as people "
                                  "reach it); unset: gateway.publicUrl, else the address the gateway listens on.")
