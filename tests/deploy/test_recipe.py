"""The deployment recipe checked by the tools that run here (no container runtime does): every Dockerfile
passes hadolint, the compose file is valid under the Compose Specification (strictly: a typo is an error),
and the balancer config in front of two replicas passes HAProxy's own check.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from compose_spec import PyCompose

from tests.support.requires import require

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SECRETS = {"REMOTECLAW_GATEWAY_TOKEN": "t" * 64, "POSTGRES_PASSWORD": "p" * 32, "REDIS_PASSWORD": "r" * 32}
_VAR = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution: ${VAR}, ${VAR:-default}, ${VAR:?error} (an unset required one fails)."""
    def value(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        got = env.get(name)
        if op in (":?", "?") and not got:
            raise ValueError(f"{name}: {arg}")
        return got if got else (arg if op in (":-", "-") else "")
    return _VAR.sub(value, text)


def load_compose(env: dict[str, str], text: str | None = None) -> PyCompose:
    raw = (DEPLOY / "compose.yaml").read_text() if text is None else text
    merged = yaml.safe_load(interpolate(raw, env))  # YAML merge keys (<<) resolved, as compose does
    return PyCompose.from_yaml(yaml.safe_dump(merged))


@pytest.mark.parametrize("dockerfile", sorted(p.name for p in DEPLOY.glob("Dockerfile*")))
def test_dockerfiles_pass_hadolint(dockerfile: str) -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    out = subprocess.run([hadolint, "--no-color", str(DEPLOY / dockerfile)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stdout + out.stderr


def test_compose_file_is_valid_and_wires_the_services() -> None:
    compose = load_compose(SECRETS)
    assert set(compose.service_names()) == {"gateway", "gateway-b", "balancer", "node", "postgres", "redis"}
    gateway, second = compose.get_service("gateway"), compose.get_service("gateway-b")
    assert gateway is not None and second is not None
    assert gateway.environment == second.environment  # both replicas on the same database and Redis
    env: Any = gateway.environment
    assert env["REMOTECLAW_DATABASE_URL"] == f"postgresql://remoteclaw:{'p' * 32}@postgres:5432/remoteclaw"
    assert env["REMOTECLAW_REDIS_URL"] == f"redis://:{'r' * 32}@redis:6379/0"
    redis: Any = compose.get_service("redis")
    assert redis.command[-2:] == ["--requirepass", "r" * 32]  # a sandboxed run on the network cannot use it
    # What bubblewrap needs in a container (a user namespace, a fresh /proc), on both replicas.
    assert {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} <= set(gateway.security_opt or [])
    assert second.profiles == {"replicas"} and compose.get_service("node").profiles == {"node"}  # type: ignore[union-attr]
    assert gateway.env_file is not None


def test_compose_refuses_a_typo_and_a_missing_secret() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    with pytest.raises(ValueError, match="restrat"):
        load_compose(SECRETS, text.replace("restart: unless-stopped", "restrat: unless-stopped", 1))
    with pytest.raises(ValueError, match="service_happy"):
        load_compose(SECRETS, text.replace("condition: service_healthy", "condition: service_happy", 1))
    with pytest.raises(ValueError, match="REMOTECLAW_GATEWAY_TOKEN"):
        load_compose({"POSTGRES_PASSWORD": "p"})


def test_env_example_names_every_required_secret() -> None:
    example = (DEPLOY / "env.example").read_text()
    required = set(re.findall(r"\$\{(\w+):\?", (DEPLOY / "compose.yaml").read_text()))
    assert required and all(re.search(rf"^{name}=", example, re.MULTILINE) for name in required)


def test_balancer_config_passes_haproxys_check() -> None:
    haproxy = shutil.which("haproxy")
    require(haproxy is not None, "haproxy is not installed (apt-get install haproxy)")
    out = subprocess.run([str(haproxy), "-c", "-f", str(DEPLOY / "haproxy.cfg")], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stdout + out.stderr
