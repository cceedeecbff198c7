"""Every relative link in README.md and docs/ leads somewhere: the file exists, and a ``#anchor`` names a heading
of that file (GitHub's slugs). docs/README.md, the index, names every page under docs/."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_HTML_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def _prose(text: str) -> str:
    """The text without code blocks and code spans (links there are examples, not links)."""
    return _CODE.sub("", _FENCE.sub("", text))


def links(page: Path) -> list[str]:
    text = _prose(page.read_text())
    return _INLINE.findall(text) + _REFERENCE.findall(text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its words
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    seen: dict[str, int] = {}
    out = set(_HTML_ID.findall(text))
    for heading in _HEADING.findall(text):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken(page: Path) -> list[str]:
    problems = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue  # http:, https:, mailto:: not ours to check offline
        path_part, _, anchor = target.partition("#")
        dest = page if not path_part else (page.parent / unquote(path_part)).resolve()
        if not dest.exists():
            problems.append(f"{target}: no such file")
            continue
        if dest.is_dir():
            problems.append(f"{target}: a folder (link its README.md)")
            continue
        if anchor and dest.suffix == ".md" and unquote(anchor).lower() not in anchors(dest):
            shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest.name
            problems.append(f"{target}: no heading #{anchor} in {shown}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_the_docs_index_names_every_page() -> None:
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for t in links(index) if not t.startswith("http")}
    pages = {p.resolve() for p in (ROOT / "docs").rglob("*.md") if p != index}
    assert sorted(str(p.relative_to(ROOT)) for p in pages - linked) == []
    readme = {t.partition("#")[0] for t in links(ROOT / "README.md")}
    assert {"docs/README.md", "docs/control-ui.md"} <= readme


def test_the_checker_catches_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A title\n\n## Second `part`\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok](there.md#second-part) [gone](../deployment.md) [bad](there.md#nope)\n"
                    "`[code](missing.md)` [web](https://example.org/x.md)\n\n```\n[fenced](missing.md)\n```\n")
    assert broken(page) == ["../deployment.md: no such file", "there.md#nope: no heading #nope in there.md"]


REPO_FOLDERS = ("gateway", "channels", "nodes", "plugins", "mcp_shim", "migrations", "tests", "bench", "scripts",
                "deploy", "docs", ".ci")
PYTHON_PACKAGES = ("gateway", "channels", "nodes", "plugins", "mcp_shim")
_SECTION = re.compile(r"`((?:" + "|".join(map(re.escape, REPO_FOLDERS)) + r")/[\w/]*)`")


def stale_paths(page: Path, root: Path = ROOT) -> list[str]:
    """The repository paths a page names in code spans that do not exist. A path from the top (``gateway/x.py``,
    ``tests/...``) must exist as written; a module path without its package (``server/app.py``) must exist in the
    package its section is about (the nearest heading naming one) or in one of the Python packages. Placeholders
    (``tests/channels/<name>/``) and pytest node ids (``file.py::test``) are read up to where they start."""
    problems: list[str] = []
    sections: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        if heading := re.match(r"(#{1,6})\s", line):
            level = len(heading.group(1))
            sections = [s for s in sections if s[0] < level]
            if named := _SECTION.search(line):
                sections.append((level, named.group(1).rstrip("/")))
        for span in _CODE.findall(line):
            for word in span.strip("`").split():
                path = re.split(r"::|<|\{|\.\.\.", word)[0].strip(".,:;()'\"")
                if not re.fullmatch(r"[\w.*/-]+/[\w.*/-]*", path) or "://" in path or path.startswith("/"):
                    continue
                if path.split("/")[0] in REPO_FOLDERS:
                    bases = [root]
                elif path.endswith(".py"):
                    bases = [root / s for _, s in sections] + [root / p for p in PYTHON_PACKAGES]
                else:
                    continue  # a folder of the state directory, an image's, a URL path: not the repository's
                if not any(base.glob(path) if "*" in path else (base / path).exists() for base in bases):
                    problems.append(f"{page.relative_to(root)}:{number}: `{path}` does not exist")
    return problems


@pytest.mark.parametrize("page", ["architecture.md", "modules.md", "testing.md"])
def test_the_maps_name_only_paths_that_exist(page: str) -> None:
    """docs/architecture.md is the map a newcomer reads first, docs/modules.md the module map beside the code: a
    module that moves must move there too."""
    assert stale_paths(ROOT / "docs" / page) == []


def test_the_path_checker_catches_a_moved_module(tmp_path: Path) -> None:
    (tmp_path / "gateway" / "server").mkdir(parents=True)
    (tmp_path / "gateway" / "server" / "app.py").write_text("")
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("# The map\n\n`gateway/server/app.py` and `server/app.py`, `gateway/server/*.py`,\n"
                    "`tests/gateway/<package>/` `gateway/server/app.py::test_x` `~/.remoteclaw/state/`\n\n"
                    "## `gateway/server/` — the server\n\n`app.py`, `old/gone.py` and `gateway/moved.py`\n\n"
                    "```\ngateway/fenced.py `gateway/fenced.py`\n```\n")
    assert stale_paths(page, tmp_path) == ["docs/page.md:4: `tests/gateway/` does not exist",
                                           "docs/page.md:8: `old/gone.py` does not exist",
                                           "docs/page.md:8: `gateway/moved.py` does not exist"]
