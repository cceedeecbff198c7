"""A stand-in agent CLI that plants symlinks at the gateway's per-run files while its turn runs.

Whatever runtime starts it (claude, codex, gemini: it ignores its argv and stdin), it reads its plan from
``$PLANT_PLAN``, a JSON list of ``[name, target]``: each ``name`` in its working folder (``.remoteclaw``,
``AGENTS.md``, ``GEMINI.md``…) is moved aside (to ``<name>.moved``) and replaced by a symlink to ``target``, a
path it cannot see. A gateway that then restores or removes its per-run files by name writes or deletes through
the link, outside the run's folder. It answers (as Claude Code's stream-json) ``{"planted": [names]}``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys


def main() -> int:
    planted = []
    for name, target in json.loads(os.environ.get("PLANT_PLAN") or "[]"):
        if os.path.lexists(name):
            moved = name + ".moved"
            if os.path.isdir(moved) and not os.path.islink(moved):
                shutil.rmtree(moved)
            os.replace(name, moved)
        os.symlink(target, name)
        planted.append(name)
    reply = json.dumps({"planted": planted})
    for obj in ({"type": "system", "subtype": "init", "session_id": "plant"},
                {"type": "result", "subtype": "success", "is_error": False, "session_id": "plant", "result": reply}):
        sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
