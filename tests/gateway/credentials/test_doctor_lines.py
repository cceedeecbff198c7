"""``remoteclaw doctor`` says per agent which credential the model gateway holds, which login it refreshes, what it
cannot front (and what ``credentialsMode: shared`` gives up), and the egress each tier gets."""

from __future__ import annotations

import json
from pathlib import Path

from tests.gateway.cli.test_doctor import doctor
from tests.gateway.credentials.test_model_gateway import login
from tests.support.fake_chatgpt import access_token, chatgpt_login


def test_doctor_names_what_the_model_gateway_holds_and_what_it_cannot_front(tmp_path: Path) -> None:
    home = tmp_path / "home"
    login(home)
    (home / ".gemini").mkdir()
    (home / ".gemini" / "oauth_creds.json").write_text("{}")
    chatgpt_login(home / ".codex", access=access_token(), refresh="rt-x", account="acct-x")
    agents = [{"id": "keyed", "runtime": "claude", "env": {"ANTHROPIC_API_KEY": "sk-x", "HOME": str(home)}},
              {"id": "sub", "runtime": "claude", "env": {"HOME": str(home)}},
              {"id": "google", "runtime": "gemini", "env": {"HOME": str(home)}},
              {"id": "chatgpt", "runtime": "codex", "env": {"HOME": str(home)}},
              {"id": "shared", "runtime": "gemini", "env": {"HOME": str(home)}, "credentialsMode": "shared"},
              {"id": "reader", "runtime": "claude", "env": {"ANTHROPIC_API_KEY": "sk-x", "HOME": str(home)},
               "sandbox": {"network": "none", "egress": ["*.github.com"], "othersEgress": ["Docs.Python.org"]}},
              {"id": "closed", "runtime": "claude", "env": {"ANTHROPIC_API_KEY": "sk-x", "HOME": str(home)},
               "sandbox": {"othersEgress": []}}]
    cfg = {"agents": {"default": "keyed", "list": agents}, "modelGateway": {"egress": {"allow": ["pypi.org"]}}}
    out = doctor(tmp_path / "state", cfg, "--json")
    rows = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert "ANTHROPIC_API_KEY" in rows["model gateway: keyed"]["detail"]
    assert "sk-x" not in out.stdout  # the key's name, never its value
    assert ".credentials.json (a subscription login it refreshes)" in rows["model gateway: sub"]["detail"]
    chatgpt = rows["model gateway: chatgpt"]
    assert chatgpt["status"] == "ok" and "chatgpt.com/backend-api/codex: " in chatgpt["detail"] and \
        "auth.json (a subscription login it refreshes)" in chatgpt["detail"], chatgpt
    assert "rt-x" not in out.stdout
    google = rows["model gateway: google"]
    assert google["status"] == "warn" and "only the owner's runs" in google["detail"], google
    assert "other people's runs hold the owner's credential" in rows["model gateway: shared"]["detail"]
    egress = rows["egress: keyed"]["detail"]
    assert egress.startswith("owner: the machine's network") and "pypi.org through the gateway's HTTPS proxy" in egress
    reader = rows["egress: reader"]["detail"]  # per tier, per agent, replacing the global list
    assert reader == ("owner: none: the gateway only (model gateway, MCP) and *.github.com through the gateway's "
                      "HTTPS proxy; everyone else: none: the gateway only (model gateway, MCP) and docs.python.org "
                      "through the gateway's HTTPS proxy"), reader
    assert rows["egress: closed"]["detail"].endswith("everyone else: none: the gateway only (model gateway, MCP)")
