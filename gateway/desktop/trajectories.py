"""Trajectories kept on the gateway: the node's recording as it arrived, unpacked, with what the run did.

Each one is ``<state dir>/desktop/trajectories/<id>/``: Cua Driver's turn folders (``turn-00001/action.json``,
``screenshot.png``…) and ``trajectory.json``, the gateway's own record beside them: the node, the session,
what the agent was asked (the session's last messages), the tool calls the run made while recording (the
shim's ``hooks.tool.after`` records), the run's side-effect records, and each desktop call with its result and
approval. The zip as the node sent it is kept at ``<state dir>/outbound/desktop/<id>.zip``, the folder the chat
tools may send from, so it can be delivered to a chat as a file. A random ``viewKey`` names the trajectory's web
page (``web.py``).
"""

from __future__ import annotations

import io
import json
import re
import secrets
import shutil
import zipfile
from pathlib import Path
from typing import Any

from gateway.paths import outbound_dir

__all__ = ["TrajectoryStore"]

META = "trajectory.json"
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class TrajectoryStore:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.root = state_dir / "desktop" / "trajectories"

    def folder(self, trajectory_id: str) -> Path | None:
        if not _ID.match(trajectory_id):
            return None
        path = self.root / trajectory_id
        return path if (path / META).is_file() else None

    def zip_path(self, trajectory_id: str) -> Path | None:
        """The kept recording's zip (in its session's outbound folder, under a name with random bits)."""
        meta = self.meta(trajectory_id)
        path = Path(str(meta.get("zipPath"))) if meta and meta.get("zipPath") else None
        return path if path is not None and path.is_file() else None

    def save(self, trajectory_id: str, data: bytes, meta: dict[str, Any]) -> dict[str, Any]:
        """Keep a recording (blocking: run it in a thread); returns its ``trajectory.json``."""
        if not _ID.match(trajectory_id):
            raise ValueError(f"invalid trajectory id {trajectory_id!r}")
        folder = self.root / trajectory_id
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True, mode=0o700)
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            total = sum(i.file_size for i in zf.infolist())
            if total > MAX_UNPACKED_BYTES:
                raise ValueError(f"the recording unpacks to {total} bytes, over {MAX_UNPACKED_BYTES}")
            for info in zf.infolist():
                target = (folder / info.filename).resolve()
                if not target.is_relative_to(folder.resolve()):
                    raise ValueError(f"the recording holds a path outside its folder: {info.filename}")
            zf.extractall(folder)
        zipped = outbound_dir(self.state_dir, "desktop", meta.get("sessionKey")) / \
            f"{secrets.token_hex(8)}-{trajectory_id}.zip"  # a run may send its own session's, by a name not guessed
        zipped.write_bytes(data)
        meta = {**meta, "trajectoryId": trajectory_id, "viewKey": secrets.token_hex(16),
                "turns": self.turns(folder), "zipPath": str(zipped), "size": len(data)}
        (folder / META).write_text(json.dumps(meta, indent=2, ensure_ascii=False))
        return meta

    def meta(self, trajectory_id: str) -> dict[str, Any] | None:
        folder = self.folder(trajectory_id)
        if folder is None:
            return None
        data: dict[str, Any] = json.loads((folder / META).read_text())
        return data

    def update(self, trajectory_id: str, **changes: Any) -> None:
        folder = self.folder(trajectory_id)
        if folder is None:
            return
        data = json.loads((folder / META).read_text())
        data.update(changes)
        (folder / META).write_text(json.dumps(data, indent=2, ensure_ascii=False))

    def by_view_key(self, key: str) -> dict[str, Any] | None:
        if not re.fullmatch(r"[0-9a-f]{32}", key):
            return None
        for meta_file in self.root.glob(f"*/{META}"):
            data = json.loads(meta_file.read_text())
            if secrets.compare_digest(str(data.get("viewKey")), key):
                return dict(data)
        return None

    def listing(self) -> list[dict[str, Any]]:
        out = []
        for meta_file in sorted(self.root.glob(f"*/{META}"), key=lambda p: p.stat().st_mtime, reverse=True):
            data = json.loads(meta_file.read_text())
            out.append({k: data.get(k) for k in ("trajectoryId", "nodeId", "nodeName", "sessionKey", "startedAtMs",
                                                  "stoppedAtMs", "turns", "size", "zipPath")})
        return out

    @staticmethod
    def turns(folder: Path) -> list[dict[str, Any]]:
        """Each turn: its folder, the tool and arguments it recorded, its result, and its pictures."""
        out = []
        for turn in sorted(p for p in folder.glob("turn-*") if p.is_dir()):
            try:
                action = json.loads((turn / "action.json").read_text())
            except (OSError, ValueError):
                action = {}
            out.append({"turn": turn.name, "tool": action.get("tool"), "arguments": action.get("arguments"),
                        "resultSummary": action.get("result_summary"), "error": action.get("result_error"),
                        "timestamp": action.get("timestamp"),
                        "images": sorted(p.name for p in turn.glob("*.png"))})
        return out
