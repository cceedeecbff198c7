"""A start imports no method module (``gateway/methods/index.json``): each is imported at the first call of one of
its methods, and the index stays equal to what the modules declare."""

from __future__ import annotations

import json
import subprocess
import sys

from gateway.methods import INDEX_FILE
from tests.support.gateway_proc import ROOT


def test_the_index_is_what_the_method_modules_declare() -> None:
    # A fresh interpreter: what each module adds is read from the registry as it is imported, one by one.
    probe = "import json; from gateway.dispatch.method_index import build; print(json.dumps(build()))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(INDEX_FILE.read_text()) == json.loads(proc.stdout), (
        "gateway/methods/index.json is out of date: run .venv/bin/python -m gateway.dispatch.method_index")


PROBE = """
import json, sys
from gateway.methods import defer_all
from gateway.dispatch.registry import registry, MethodSpec

defer_all()
listed_before = registry.names()
out = {"before": "gateway.runs.chat_methods" in sys.modules or "gateway.voice.methods" in sys.modules,
       "listed": "chat.send" in registry.names() and "tts.convert" in registry.names()}
spec = registry.get("chat.send")
out["chat_after_get"] = "gateway.runs.chat_methods" in sys.modules and spec is not None and spec.name == "chat.send"
out["voice_still_deferred"] = "gateway.voice.methods" not in sys.modules
out["plugin_name_taken"] = registry.declares("tts.convert") and "gateway.voice.methods" not in sys.modules
out["unknown"] = registry.get("no.such.method") is None
out["all_after_unknown"] = "gateway.voice.methods" in sys.modules
out["names_equal"] = listed_before == sorted(s.name for s in registry.specs())  # hello-ok listed every method
print(json.dumps(out))
"""


def test_a_module_is_imported_at_its_first_call_and_every_name_is_listed_before() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out == {"before": False, "listed": True, "chat_after_get": True, "voice_still_deferred": True,
                   "plugin_name_taken": True, "unknown": True, "all_after_unknown": True, "names_equal": True}, out
