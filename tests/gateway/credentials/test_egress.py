"""Egress per tier: a stranger's run reaches the gateway (its model gateway and tools) and nothing else, and with an
allowlist the hosts named through the gateway's HTTPS proxy, never a private or metadata address, even through a
name that resolves to one (names in /etc/hosts, added for the test and removed after)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.credentials.egress import refused_address
from tests.gateway.credentials.test_model_gateway import REAL_KEY, ask_model, gateway, pry
from tests.support.fake_anthropic import FakeAnthropic

HOSTS = {"good.remoteclaw.test": "127.0.0.2", "evil.remoteclaw.test": "127.0.0.1",
         "meta.remoteclaw.test": "169.254.169.254", "private.remoteclaw.test": "10.1.2.3",
         "unlisted.remoteclaw.test": "127.0.0.2", "owners.remoteclaw.test": "127.0.0.2"}


@pytest.fixture
def names() -> Iterator[None]:
    hosts = Path("/etc/hosts")
    before = hosts.read_text()
    try:
        hosts.write_text(before.rstrip("\n") + "\n" + "".join(f"{ip} {n}\n" for n, ip in HOSTS.items()))
    except OSError:
        pytest.skip("/etc/hosts is not writable here (the names the test resolves)")
    try:
        yield
    finally:
        hosts.write_text(before)


@pytest.fixture
def echo() -> Iterator[int]:
    """An echo server on 127.0.0.2 (the 'allowed host'; a public address in real use)."""
    srv = socket.create_server(("127.0.0.2", 0))
    port = srv.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.sendall(conn.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    yield port
    srv.close()


async def test_a_strangers_run_reaches_the_model_gateway_and_allowed_hosts_only(
        tmp_path: Path, names: None, echo: int) -> None:
    egress = {"allow": ["good.remoteclaw.test", "evil.remoteclaw.test", "meta.remoteclaw.test",
                        "private.remoteclaw.test"], "ports": [echo, 80], "allowAddresses": ["127.0.0.2"]}
    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url, config={"modelGateway": {"egress": egress}})
        try:
            found = await pry(gw, owner=False, http=[ask_model("from a sandbox without a network")],
                              tcp=[["127.0.0.1", gw.port], ["127.0.0.2", echo],
                                   ["127.0.0.1", int(api.url.rsplit(":", 1)[1])]],
                              tunnel=[f"good.remoteclaw.test:{echo}", f"evil.remoteclaw.test:{echo}",
                                      "meta.remoteclaw.test:80", f"private.remoteclaw.test:{echo}",
                                      f"unlisted.remoteclaw.test:{echo}", f"127.0.0.2:{echo}"])
            owner = await pry(gw, owner=True, tcp=[["127.0.0.2", echo]])
        finally:
            gw.stop()
    assert not any(found["tcp"].values()), found["tcp"]  # nothing outside its own network, not even the fake
    assert found["http"][0].startswith("200 ") and "from a sandbox without a network" in found["http"][0]
    assert [h.get("x-api-key") for h in api.seen_headers if "anthropic-version" in h] == [REAL_KEY]
    t = found["tunnel"]
    assert t[f"good.remoteclaw.test:{echo}"] == "HTTP/1.1 200 Connection established ping", t
    assert "403" in t[f"evil.remoteclaw.test:{echo}"] and "loopback" in t[f"evil.remoteclaw.test:{echo}"], t
    assert "403" in t["meta.remoteclaw.test:80"] and "metadata" in t["meta.remoteclaw.test:80"], t
    assert "403" in t[f"private.remoteclaw.test:{echo}"] and "private" in t[f"private.remoteclaw.test:{echo}"], t
    assert "403" in t[f"unlisted.remoteclaw.test:{echo}"] and "403" in t[f"127.0.0.2:{echo}"], t
    assert owner["tcp"] == {f"127.0.0.2:{echo}": True}  # the owner's runs keep the machine's network (as before)


async def test_each_tier_reaches_its_own_list_only(tmp_path: Path, names: None, echo: int) -> None:
    """The agent's lists replace the global one per tier: the owner's run (without a network here) reaches its
    host and not the strangers', the stranger's the other way round, and neither the global list's."""
    egress = {"allow": ["unlisted.remoteclaw.test"], "ports": [echo], "allowAddresses": ["127.0.0.2"]}
    hosts = [f"{h}.remoteclaw.test:{echo}" for h in ("owners", "good", "unlisted")]
    with FakeAnthropic() as api:
        gw = gateway(tmp_path, api.url, config={"modelGateway": {"egress": egress}},
                     sandbox={"network": "none", "egress": ["owners.remoteclaw.test"],
                              "othersEgress": ["GOOD.remoteclaw.test"]})
        try:
            owner = await pry(gw, owner=True, tunnel=hosts)
            stranger = await pry(gw, owner=False, tunnel=hosts, tcp=[["127.0.0.2", echo]])
        finally:
            gw.stop()
    ok = "HTTP/1.1 200 Connection established ping"
    assert owner["tunnel"][hosts[0]] == ok and "403" in owner["tunnel"][hosts[1]], owner["tunnel"]
    assert stranger["tunnel"][hosts[1]] == ok and "403" in stranger["tunnel"][hosts[0]], stranger["tunnel"]
    assert "403" in owner["tunnel"][hosts[2]] and "403" in stranger["tunnel"][hosts[2]]
    assert "othersEgress" in stranger["tunnel"][hosts[0]]  # the refusal says where the list is
    assert stranger["tcp"] == {f"127.0.0.2:{echo}": False}  # still no network of its own


@pytest.mark.parametrize(("ip", "why"), [
    ("169.254.169.254", "a cloud metadata address"), ("fd00:ec2::254", "a cloud metadata address"),
    ("100.100.100.200", "a cloud metadata address"), ("127.0.0.1", "a loopback address"),
    ("::1", "a loopback address"), ("::ffff:127.0.0.1", "a loopback address"), ("10.0.0.5", "a private address"),
    ("192.168.1.1", "a private address"), ("fe80::1", "a link-local address"),
    ("169.254.10.10", "a link-local address"),
    ("0.0.0.0", "a private address"), ("224.0.0.1", "a multicast address"),
    ("8.8.8.8", None), ("2606:4700:4700::1111", None)])
def test_the_deny_list(ip: str, why: str | None) -> None:
    assert refused_address(ip) == why


def test_an_owner_named_private_address_passes_and_metadata_never() -> None:
    assert refused_address("10.0.0.5", frozenset({"10.0.0.5"})) is None
    assert refused_address("169.254.169.254", frozenset({"169.254.169.254"})) == "a cloud metadata address"
