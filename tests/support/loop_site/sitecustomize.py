"""Registers the loopback test channel in a test gateway subprocess (put this folder on PYTHONPATH).

It waits for ``channels.manager`` to be imported instead of importing it, so other Python processes
that inherit the environment (agent stand-ins, the MCP shim) start as fast as usual.
"""

import importlib.abc
import importlib.machinery
import sys


class _After(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "channels.manager":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.register_channel_type("loop", "tests.support.loop_channel:LoopChannel")

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _After())
