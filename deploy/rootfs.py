"""Build an image's filesystem from its Dockerfile without a container runtime, and run it.

    sudo python3 deploy/rootfs.py --dockerfile deploy/Dockerfile --rootfs /tmp/rootfs [--run] [--base-cache DIR]

Where no container runtime works (these test machines: rootless podman cannot set rlimits), this proves the
recipe with what does: the base image's Debian release from ``debootstrap`` with Python, then each of the
Dockerfile's instructions in a ``chroot`` as root (``ENV``, ``WORKDIR``, ``COPY``, ``RUN``, ``USER``), and
with ``--run`` the image's ``CMD`` started as its ``USER``, with the ``HEALTHCHECK`` command polled until it
passes. Network, hostname and process namespaces are the host's (a chroot isolates only the filesystem),
which is why this is a check of the recipe, not a container. Needs root, debootstrap and a Debian mirror.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

# The Debian packages that stand in for a base image (python:3.11-slim is Debian bookworm with Python 3.11).
BASES = {"python:3.11-slim": ("bookworm", ["python3", "python3-venv", "python-is-python3", "ca-certificates"])}
MIRROR = os.environ.get("REMOTECLAW_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
BASE_MAX_AGE_S = 7 * 24 * 3600


def log(message: str) -> None:
    print(f"rootfs: {message}", file=sys.stderr, flush=True)


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        keyword, _, rest = line.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


class Image:
    """A root filesystem being built the way the Dockerfile says."""

    def __init__(self, root: Path, context: Path, base_cache: Path | None = None) -> None:
        self.root = root
        self.context = context
        self.base_cache = base_cache
        """A folder keeping each debootstrapped base as a tar file, as a container runtime keeps pulled base
        images: a later build unpacks it in seconds instead of running debootstrap again (about half a
        minute). A base older than a week is made again, so security updates come in."""
        self.env: dict[str, str] = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8"}
        self.args: dict[str, str] = {}
        self.workdir = "/"
        self.user = "0:0"
        self.cmd: list[str] = []
        self.entrypoint: list[str] = []
        self.healthcheck: list[str] = []
        self.volumes: list[str] = []
        self.mounted: list[Path] = []

    # -- the instructions ----------------------------------------------------------------------

    def from_(self, image: str) -> None:
        if image not in BASES:
            raise SystemExit(f"rootfs: no Debian stand-in for base image {image} (known: {', '.join(BASES)})")
        suite, packages = BASES[image]
        if not (self.root / "usr" / "bin" / "python3").exists():
            self._base(suite, packages)
        if HOST_CA.exists():  # this machine's TLS trust (a proxy CA, say) for pip and apt inside
            shutil.copy(HOST_CA, self.root / "etc/ssl/certs/ca-certificates.crt")
        shutil.copy("/etc/resolv.conf", self.root / "etc/resolv.conf")

    def _base(self, suite: str, packages: list[str]) -> None:
        key = hashlib.sha256(f"{suite} {MIRROR} {' '.join(packages)}".encode()).hexdigest()[:12]
        cached = self.base_cache / f"debian-{suite}-{key}.tar" if self.base_cache else None
        if cached and cached.exists() and time.time() - cached.stat().st_mtime < BASE_MAX_AGE_S:
            log(f"base {suite} from {cached}")
            self.root.mkdir(parents=True, exist_ok=True)
            subprocess.run(["tar", "-xpf", str(cached), "--numeric-owner", "-C", str(self.root)], check=True)
            return
        log(f"debootstrap {suite} into {self.root} (with {', '.join(packages)})")
        subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", suite,
                        str(self.root), MIRROR], check=True, stdout=subprocess.DEVNULL)
        if cached:
            cached.parent.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(f".{os.getpid()}.partial")  # a concurrent build never reads half a file
            subprocess.run(["tar", "-cpf", str(partial), "--numeric-owner", "-C", str(self.root), "."], check=True)
            partial.replace(cached)
            for stale in cached.parent.glob(f"debian-{suite}-*.tar"):  # the bases of other package lists
                if stale != cached:
                    stale.unlink(missing_ok=True)

    def env_(self, args: str) -> None:
        for pair in shlex.split(args):
            key, _, value = pair.partition("=")
            self.env[key] = re.sub(r"\$\{(\w+)\}", lambda m: self.args.get(m.group(1), self.env.get(m.group(1), "")),
                                   value)

    def arg_(self, args: str) -> None:
        """``ARG NAME=default``: its value for the ``ENV`` lines that name it as ``${NAME}`` (no --build-arg here)."""
        key, _, value = args.partition("=")
        self.args[key.strip()] = value.strip()

    def workdir_(self, path: str) -> None:
        self.workdir = path if path.startswith("/") else f"{self.workdir.rstrip('/')}/{path}"
        (self.root / self.workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)

    def copy_(self, args: str) -> None:
        *sources, dest = shlex.split(args)
        target = Path(dest if dest.startswith("/") else f"{self.workdir.rstrip('/')}/{dest}")
        for source in sources:
            src = self.context / source
            where = self.root / str(target).lstrip("/")
            if src.is_dir():
                shutil.copytree(src, where, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                if dest.endswith("/"):
                    where.mkdir(parents=True, exist_ok=True)
                    where = where / src.name
                shutil.copy(src, where)

    def run_(self, command: str) -> None:
        log(f"RUN {command[:100]}{'…' if len(command) > 100 else ''}")
        subprocess.run(self._chroot(["/bin/sh", "-c", f"cd {shlex.quote(self.workdir)} && {command}"]),
                       check=True)

    def exec_form(self, args: str) -> list[str]:
        if args.startswith("["):
            return [str(a) for a in json.loads(args)]
        return ["/bin/sh", "-c", args]

    def build(self, dockerfile: Path) -> None:
        for keyword, args in instructions(dockerfile):
            if keyword == "FROM":
                self.from_(args.split()[0])
                self.mount()
            elif keyword == "ENV":
                self.env_(args)
            elif keyword == "WORKDIR":
                self.workdir_(args)
            elif keyword == "COPY":
                self.copy_(args)
            elif keyword == "RUN":
                self.run_(args)
            elif keyword == "USER":
                self.user = args if ":" in args else f"{args}:{args}"
            elif keyword == "CMD":
                self.cmd = self.exec_form(args)
            elif keyword == "ENTRYPOINT":
                self.entrypoint = self.exec_form(args)
            elif keyword == "VOLUME":
                self.volumes = [str(v) for v in json.loads(args)] if args.startswith("[") else args.split()
            elif keyword == "HEALTHCHECK":
                _options, _, command = args.partition("CMD ")
                self.healthcheck = self.exec_form(command.strip()) if command else []
            elif keyword == "ARG":
                self.arg_(args)
            elif keyword in ("EXPOSE", "LABEL"):
                continue
            else:
                raise SystemExit(f"rootfs: instruction {keyword} is not supported here")
        log("built")

    # -- running ---------------------------------------------------------------------------------

    def mount(self) -> None:
        # /proc only. /dev is never bind-mounted: debootstrap made the device nodes a build needs, and a
        # left-over bind mount of the host's /dev inside a temp dir would let its clean-up delete them.
        subprocess.run(["mount", "-t", "proc", "proc", str(self.root / "proc")], check=True)
        self.mounted.append(self.root / "proc")

    def unmount(self) -> None:
        for path in reversed(self.mounted):
            subprocess.run(["umount", "-l", str(path)], check=False)
        self.mounted.clear()

    def _chroot(self, argv: list[str], user: str = "0:0", extra_env: dict[str, str] | None = None) -> list[str]:
        env = {**self.env, **(extra_env or {})}
        if HOST_CA.exists():
            env.setdefault("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt")
        pairs = [f"{k}={v}" for k, v in env.items()]
        return ["chroot", f"--userspec={user}", str(self.root), "/usr/bin/env", "-i", *pairs, *argv]

    def start(self, extra_env: dict[str, str], log_file: Path) -> subprocess.Popen[bytes]:
        """The image's command as the container would run it: its user, its workdir, its environment."""
        for volume in self.volumes:
            (self.root / volume.lstrip("/")).mkdir(parents=True, exist_ok=True)
        argv = [*self.entrypoint, *self.cmd]
        command = f"cd {shlex.quote(self.workdir)} && exec {shlex.join(argv)}"
        return subprocess.Popen(self._chroot(["/bin/sh", "-c", command], self.user, extra_env),
                                stdout=log_file.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)

    def healthy(self) -> bool:
        if not self.healthcheck:
            return True
        return subprocess.run(self._chroot(self.healthcheck, self.user), capture_output=True,
                              check=False).returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dockerfile", type=Path, default=Path("deploy/Dockerfile"))
    parser.add_argument("--context", type=Path, default=Path("."))
    parser.add_argument("--rootfs", type=Path, required=True)
    parser.add_argument("--run", action="store_true", help="start the CMD and wait for the HEALTHCHECK")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--base-cache", type=Path, help="keep the debootstrapped base here and reuse it")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("rootfs: needs root (debootstrap and chroot)", file=sys.stderr)
        return 2
    image = Image(args.rootfs.resolve(), args.context.resolve(), args.base_cache)
    try:
        image.build(args.dockerfile)
        if not args.run:
            return 0
        proc = image.start({}, args.rootfs / "cmd.log")
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                print((args.rootfs / "cmd.log").read_text()[-2000:], file=sys.stderr)
                return 1
            if image.healthy():
                log("the HEALTHCHECK passes; stopping")
                os.killpg(proc.pid, 15)
                proc.wait(30)
                return 0
            time.sleep(1)
        os.killpg(proc.pid, 9)
        return 1
    finally:
        image.unmount()


if __name__ == "__main__":
    sys.exit(main())
