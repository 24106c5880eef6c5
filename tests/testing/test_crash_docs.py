"""The code of docs/testing.md's "Crash-test your own flow in five minutes", run as
written: the flow with the forgetful reviewer is flagged by ``check --crash`` (exit 1,
naming it), passes once the fix is applied (exit 0), its pytest test passes, and the
card-charging tool charges once across a crash."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _forked import run_script

from flowlib.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "testing.md"
BLOCK = re.compile(r"```python\n(# [^\n]+)\n(.*?)```", re.S)


def _blocks() -> dict[str, str]:
    section = PAGE.read_text().split("## Crash-test your own flow in five minutes", 1)[1]
    section = section.split("\n## ", 1)[0]
    return {title[2:]: code for title, code in BLOCK.findall(section)}


def _fixed(flow: str, fix: str) -> str:
    start = flow.index("    async def save_state")
    end = flow.index("\n\n\ndef build")
    return flow[:start] + fix.rstrip("\n") + flow[end:]


def test_the_page_has_the_blocks() -> None:
    assert set(_blocks()) == {"flow.py", "flow.py, the fix", "test_flow.py", "pay.py"}


def test_check_crash_flags_the_forgetful_reviewer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = _blocks()
    flow = tmp_path / "flow.py"
    flow.write_text(blocks["flow.py"])
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    code = main(["check", "--crash", "flow.py:build", "--max-examples", "8"], out=out)
    text = out.getvalue()
    assert code == 1, text
    assert (
        "agent `reviewer` answered differently after resume: its save_state/load_state do "
        "not keep what its replies depend on" in text
    )
    assert (tmp_path / "flow.counterexample.svg").is_file()


def test_check_crash_passes_the_fixed_flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks()
    flow = tmp_path / "flow.py"
    monkeypatch.chdir(tmp_path)
    flow.write_text(_fixed(blocks["flow.py"], blocks["flow.py, the fix"]))
    out = io.StringIO()
    code = main(["check", "--crash", "flow.py:build", "--max-examples", "6"], out=out)
    assert code == 0, out.getvalue()
    assert "survives crashes" in out.getvalue()


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_pages_pytest_test_passes_on_the_fixed_flow(tmp_path: Path) -> None:
    blocks = _blocks()
    (tmp_path / "flow.py").write_text(_fixed(blocks["flow.py"], blocks["flow.py, the fix"]))
    (tmp_path / "test_flow.py").write_text(blocks["test_flow.py"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_flow.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_card_is_charged_once_across_the_crash(tmp_path: Path) -> None:
    script = tmp_path / "pay.py"
    script.write_text(_blocks()["pay.py"])
    done = run_script(script, paths=[ROOT])  # ``python pay.py``, forked (tests/_forked.py)
    assert done.returncode == 0, done.stderr[-3000:]
