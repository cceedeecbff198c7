"""The environment an agent run starts with: the gateway's own, less what is the gateway's secret.

The gateway's environment may hold its token, database URL, bot tokens and API keys for other services. An
agent's CLI needs a few of those (its model's API key) and nothing else: every variable whose name looks like a
credential is left out unless the runtime declares it as its own, the agent's ``env`` sets it, or the owner
lists it in ``sandbox.passEnv``. ``REMOTECLAW_*`` never passes: the run's context is set afresh.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

__all__ = ["SECRET_NAME", "child_env"]

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE|CREDENTIAL|ACCESS_KEY|AUTH|COOKIE|SESSION_KEY",
                         re.IGNORECASE)
"""Names that look like they hold a credential (``TELEGRAM_BOT_TOKEN``, ``AWS_SECRET_ACCESS_KEY``…)."""


def child_env(base: Mapping[str, str], own: Mapping[str, str], *, allowed: Iterable[str] = ()) -> dict[str, str]:
    """``base`` (the gateway's environment) without ``REMOTECLAW_*`` and secret-looking names, then ``own``.

    Args:
        base: the gateway's environment.
        own: what the run sets itself (its context, the agent's ``env``): always kept.
        allowed: names or shell patterns (``ANTHROPIC_*``) of secret-looking variables that may pass.
    """
    patterns = [p.upper() for p in allowed]
    env: dict[str, str] = {}
    for name, value in base.items():
        upper = name.upper()
        if upper.startswith("REMOTECLAW_"):
            continue
        if SECRET_NAME.search(upper) and not any(fnmatch.fnmatchcase(upper, p) for p in patterns):
            continue
        env[name] = value
    env.update(own)
    return env
