"""``message.sendAttachment`` from a local path must not mail gateway secrets or take the gateway down.

Real gateway, real python-telegram-bot, loopback fake Bot API. The config file lives outside the
state dir here (``REMOTECLAW_CONFIG_PATH``), as it may in a deployment.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_telegram import FakeTelegram, module_fake
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

T = {"channel": "telegram", "to": "111"}


fake = module_fake()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, fake: FakeTelegram) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("attach")
    cfg_path = root / "etc" / "remoteclaw.json"
    cfg_path.parent.mkdir()
    cfg_path.write_text(json.dumps({"channels": {"telegram": fake.channel_config(dmPolicy="open")}}))
    with GatewayProcess(root / "state", env={"REMOTECLAW_CONFIG_PATH": str(cfg_path)}) as proc:
        proc.cfg_path = cfg_path  # type: ignore[attr-defined]
        yield proc


def sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


async def refused(gw: GatewayProcess, fake: FakeTelegram, file: str) -> dict:
    await fake.wait_polling()
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    before = len(fake.calls_of("sendDocument"))
    res = await c.req("message.sendAttachment", {**T, "file": file})
    await c.close()
    assert not res["ok"], res
    assert res["error"]["code"] == "INVALID_REQUEST" and res["error"]["details"]["field"] == "file"
    assert len(fake.calls_of("sendDocument")) == before  # nothing reached Telegram
    return res["error"]


async def test_proc_environ_is_refused(gw: GatewayProcess, fake: FakeTelegram) -> None:
    # The gateway's own environment holds the gateway token (REMOTECLAW_GATEWAY_TOKEN) and API keys.
    err = await refused(gw, fake, "/proc/self/environ")
    assert "system or gateway file" in err["message"]
    await refused(gw, fake, "/dev/null")


async def test_config_file_outside_the_state_dir_is_refused(gw: GatewayProcess, fake: FakeTelegram) -> None:
    err = await refused(gw, fake, str(gw.cfg_path))  # type: ignore[attr-defined]
    assert "system or gateway file" in err["message"]


async def test_huge_file_is_refused_and_the_gateway_lives(gw: GatewayProcess, fake: FakeTelegram,
                                                          tmp_path: Path) -> None:
    big = tmp_path / "huge.bin"
    sparse(big, 3 * 1024 * 1024 * 1024)  # no disk used, but reading it whole would need 3 GB
    err = await refused(gw, fake, str(big))
    assert "larger than" in err["message"]
    ok = tmp_path / "small.pdf"
    ok.write_bytes(b"%PDF-1.4\n")
    c = await operator(gw.url, gw.token or "", scopes=["operator.write"])
    res = await c.call("message.sendAttachment", {**T, "file": str(ok)})
    await c.close()
    assert res["ok"] and fake.calls_of("sendDocument")[-1].files["document"]["size"] == ok.stat().st_size
