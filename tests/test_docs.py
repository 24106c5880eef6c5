"""The documentation builds with ``mkdocs build --strict`` and not one warning.

This is the test command's one docs build (scripts/test.sh does not build them again). It
reads the build's own log, so a warning that strict mode would let through (or that
``--quiet`` would hide) still fails, and prints the log when the build fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent
REST_ROLE = re.compile(r":(class|meth|func|attr|mod|data|exc|obj|ref|doc):`")


def _docs_status() -> str:
    """``git status`` of ``docs/``, untracked files included."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--", "docs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout


@pytest.mark.timeout(900)
def test_docs_build_strict_without_warnings(tmp_path: Path) -> None:
    before = _docs_status()
    completed = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=880,
        env={
            **os.environ,
            "NO_MKDOCS_2_WARNING": "1",
            "PYTHONPATH": str(ROOT),  # document (and draw) this checkout's code
        },
        check=False,
    )
    log = completed.stdout + completed.stderr
    warnings = [line for line in log.splitlines() if "WARNING" in line or "Aborted" in line]
    assert not warnings, "\n".join(warnings)
    assert completed.returncode == 0, log
    assert (tmp_path / "reference" / "tools_mcp" / "index.html").is_file()
    # The build writes into the site only: the examples' drawings are generated files.
    assert (tmp_path / "examples" / "sequential.svg").is_file()
    assert _docs_status() == before, "mkdocs build wrote into docs/"


def test_the_test_command_builds_the_docs_once_through_this_file() -> None:
    """The test command's strict docs build is the test above (which also fails on a
    warning strict mode lets through and prints the whole log): test.sh runs the whole
    suite, slow tests included, and does not build the docs a second time."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert not [line for line in script.splitlines() if "mkdocs build" in line]
    runs = [
        line
        for line in script.splitlines()
        if "-m pytest" in line and "--collect-only" not in line  # that one runs no test
    ]
    assert len(runs) == 1 and '-m "slow or not slow"' in runs[0], runs
    for narrowing in (" -k", "--deselect", "--ignore", "tests/"):
        assert narrowing not in runs[0], f"test.sh runs pytest with {narrowing}"


def test_docstrings_have_no_rest_roles() -> None:
    """Docstrings are Markdown: ``:class:`X` `` would be shown as raw text."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "flowlib").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if REST_ROLE.search(line)
    ]
    assert not found, "use [`Name`][flowlib.pkg.Name] or `Name`:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("page", "example"),
    [
        ("mcp.md", "mcp_tools.py"),
        ("agents_as_tools.md", "agents_as_tools.py"),
        ("observability.md", "telemetry_console.py"),
        ("observability.md", "event_logging.py"),
        ("extending.md", "debate_team.py"),
    ],
)
def test_feature_pages_are_in_the_nav_and_name_a_runnable_example(page: str, example: str) -> None:
    """Each page points at an example that tests/test_examples.py runs."""
    assert f": {page}" in (ROOT / "mkdocs.yml").read_text(), f"{page} is not in the nav"
    assert f"examples/{example}" in (ROOT / "docs" / page).read_text()
    assert (ROOT / "examples" / example).is_file()


def _hooks() -> Any:
    spec = importlib.util.spec_from_file_location(
        "mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_signature_cache_gives_ruffs_answer_with_the_hidden_names_put_back(
    tmp_path: Path,
) -> None:
    """The docs build keeps ruff's signature layouts between builds (scripts/mkdocs_hooks.py):
    a signature whose hidden cross-reference names differ (they are random in every build)
    is answered from the cache, with its own names, exactly as ruff would answer it."""
    from mkdocstrings_handlers.python._internal.rendering import _get_ruff_formatter

    ruff = _get_ruff_formatter()
    assert ruff is not None
    hooks = _hooks()
    path = tmp_path / "signatures.json"
    cache = hooks.SignatureCache(ruff, path, "ruff x")
    first = (
        "def xxxxxxxx(task: _aB3 | None = None, *, tools: list[_Qz] = (), n: int = 1) -> _Zk9: pass"
    )
    second = first.replace("_aB3", "_x0R").replace("_Qz", "_r7").replace("_Zk9", "_private")
    for code in (first, second, first):
        answer = cache(code, 40)
        assert answer == ruff(code, 40) and "\n" in answer
    assert cache.calls == 2  # the last name's length differs: a second layout
    third = second.replace("_x0R", "_Ppp").replace("_r7", "_00")
    assert cache(third, 40) == ruff(third, 40) and cache.calls == 2
    assert cache(third, 60) == ruff(third, 60) and cache.calls == 3  # another line length
    cache.save()
    again = hooks.SignatureCache(ruff, path, "ruff x")
    assert again(first, 40) == ruff(first, 40) and again.calls == 0
    other = hooks.SignatureCache(ruff, path, "ruff y")  # another formatter version
    assert other(first, 40) == ruff(first, 40) and other.calls == 1
