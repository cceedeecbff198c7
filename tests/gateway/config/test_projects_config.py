"""``agents.list[].projects`` is checked when the config is loaded: each path an existing directory, names unique."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import ConfigError, validate


def agent(*projects: dict[str, object]) -> dict[str, object]:
    return {"agents": {"list": [{"id": "main", "projects": list(projects)}]}}


def errors(data: dict[str, object]) -> list[dict[str, str]]:
    with pytest.raises(ConfigError) as info:
        validate(data)
    return list((info.value.details or {})["errors"])


def test_projects_are_validated(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    ok = validate(agent({"name": "web", "path": str(tmp_path), "worktrees": True}))
    project = ok.agents.list[0].projects[0]
    assert project.path == str(tmp_path.resolve()) and project.worktrees
    assert ok.agents.list[0].project("web") is project and ok.agents.list[0].project("nope") is None

    missing = errors(agent({"name": "web", "path": str(tmp_path / "gone")}))
    assert missing[0]["path"] == "/agents/list/0/projects/0/path"
    assert "not an existing directory" in missing[0]["message"]
    a_file = errors(agent({"name": "f", "path": str(tmp_path / "a-file")}))
    assert "not an existing directory" in a_file[0]["message"]
    assert "absolute" in errors(agent({"name": "rel", "path": "relative/dir"}))[0]["message"]
    dupes = errors(agent({"name": "web", "path": str(tmp_path)}, {"name": "web", "path": str(tmp_path)}))
    assert dupes[0]["path"] == "/agents/list/0/projects" and "duplicate project names: web" in dupes[0]["message"]
    assert errors(agent({"name": "no spaces", "path": str(tmp_path)}))[0]["path"] == "/agents/list/0/projects/0/name"


def test_an_agent_on_a_node_has_projects_on_the_node() -> None:
    """Its projects' folders are the node's: absolute, never looked for on the gateway's machine (the node checks
    them against what it lends)."""
    on_node = {"id": "main", "node": "workbench",
               "projects": [{"name": "app", "path": "/home/someone-else/code/app", "worktrees": True}]}
    ok = validate({"agents": {"list": [on_node]}})
    assert ok.agents.list[0].projects[0].path == "/home/someone-else/code/app"
    relative = errors({"agents": {"list": [{**on_node, "projects": [{"name": "app", "path": "code/app"}]}]}})
    assert relative[0]["path"] == "/agents/list/0/projects/0/path" and "absolute path on the agent's node" in \
        relative[0]["message"]
    both = errors({"agents": {"list": [{**on_node, "workspace": "/home/me/code"}]}})
    assert "workspace or in its projects" in both[0]["message"]
    # the same path for an agent on the gateway's machine must exist here
    assert "not an existing directory" in errors(agent({"name": "app", "path": "/home/someone-else/code/app"}))[0][
        "message"]


def test_a_node_fallback_names_another_agent_and_needs_a_node() -> None:
    def agents(*entries: dict[str, object]) -> dict[str, object]:
        return {"agents": {"default": "main", "list": [{"id": "main"}, *entries]}}

    ok = validate(agents({"id": "far", "node": "bench", "nodeFallback": "main"}))
    assert ok.agents.list[1].nodeFallback == "main"
    no_node = errors(agents({"id": "far", "nodeFallback": "main"}))
    assert no_node[0]["path"] == "/agents/list/1" and "set node too" in no_node[0]["message"]
    itself = errors(agents({"id": "far", "node": "bench", "nodeFallback": "far"}))
    assert "another agent" in itself[0]["message"]
    unknown = errors(agents({"id": "far", "node": "bench", "nodeFallback": "ghost"}))
    assert unknown[0]["path"] == "/agents" and "nodeFallback 'ghost' is not an id" in unknown[0]["message"]
