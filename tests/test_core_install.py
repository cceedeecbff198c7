"""A core-only install (no extras) as a user gets it from ``pip install .`` (``tests/support/core_venv.py``): the
gateway starts, and each optional capability that is missing answers an error naming its extra and the command,
while the gateway keeps running."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.core_venv import core_python as built_core_python
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.waiting import until
from tests.support.ws import operator

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

OPTIONAL_LIBRARIES = ("av", "telegram", "discord", "playwright", "asyncpg", "redis", "numpy", "openai", "pocketsphinx")


@pytest.fixture(scope="module")
def core_python() -> str:
    python = built_core_python()
    found = subprocess.run([str(python), "-c", "import importlib.util as u, json, sys; print(json.dumps("
                            f"[m for m in {OPTIONAL_LIBRARIES!r} if u.find_spec(m)]))"],
                           capture_output=True, text=True, check=True)
    assert json.loads(found.stdout) == [], "the core venv must hold no optional library"
    return str(python)


def _extra(frame: dict[str, object], extra: str, python: str) -> str:
    assert frame["ok"] is False, frame
    error = frame["error"]
    assert isinstance(error, dict) and error["code"] == "UNAVAILABLE", error
    assert error["details"]["extra"] == extra, error  # type: ignore[index]
    # This venv is not the clone's .venv: the fix installs the part's libraries into it, named one by one.
    install = error["details"]["install"]  # type: ignore[index]
    assert install.startswith(f"{python} -m pip install ") and install in error["message"], error  # not the clone's
    assert "remoteclaw[" not in error["message"]  # remoteclaw may not be on any package index
    return str(error["message"])


async def test_the_core_starts_and_each_missing_part_names_its_extra(core_python: str, tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path / "state", python=core_python)
    with gw:
        assert gw.token
        client = await operator(gw.url, gw.token)
        try:
            tts = _extra(await client.req("tts.status"), "tts", core_python)
            assert tts.startswith("voice (text to speech and speech to text) needs the optional part 'tts'")
            _extra(await client.req("tts.convert", {"text": "hello"}), "tts", core_python)
            _extra(await client.req("browser.request", {"method": "GET", "path": "/tabs"}), "browser", core_python)

            # A Telegram account configured on an install without python-telegram-bot: said, not retried.
            await client.call("config.patch", {"patch": {"channels": {"telegram": {"botToken": "1:x"}}},
                                               "baseHash": (await client.call("config.get"))["hash"]})

            async def telegram() -> dict[str, object] | None:
                channels = (await client.call("channels.status"))["channels"]
                accounts = [a for c in channels.values() for a in c["accounts"]]
                return next((a for a in accounts if a["channel"] == "telegram" and a["state"] == "error"), None)

            account = await until(telegram, what="the telegram account's error", timeout=20)
            assert "the Telegram channel needs the optional part 'telegram'" in str(account["error"])
            assert f"{core_python} -m pip install 'python-telegram-bot>=22'" in str(account["error"])
            assert account["retrying"] is False
            health = await client.call("health")
            assert health["ok"] is True
        finally:
            await client.close()
        assert gw.proc is not None and gw.proc.poll() is None  # still running

        env = {**{k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")},
               "REMOTECLAW_STATE_DIR": str(gw.state_dir)}
        doctor = await asyncio.to_thread(subprocess.run, [core_python, "-m", "gateway.cli", "doctor", "--json"],
                                         env=env, capture_output=True, text=True, timeout=120)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["optional part telegram"]["status"] == "fail"  # configured, and missing
    assert checks["optional part telegram"]["fix"] == \
        f"{core_python} -m pip install 'python-telegram-bot>=22' 'markdown-it-py>=3', then restart the gateway"
    for part in ("discord", "tts", "browser", "postgres", "redis", "embeddings"):
        assert checks[f"optional part {part}"]["status"] == "off", checks[f"optional part {part}"]
    assert "is running there" in checks["gateway port"]["detail"]


def test_extras_table_matches_pyproject() -> None:
    """``gateway/extras.py`` is what names an extra in errors: it must list exactly the extras pyproject offers."""
    import tomllib

    from gateway import extras

    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    offered = set(optional) - {"all", "dev", "default"}
    assert {e.name for e in extras.EXTRAS} == offered
    assert optional["default"] == [f"remoteclaw[{','.join(extras.DEFAULT)}]"]
