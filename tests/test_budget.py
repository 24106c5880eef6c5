"""The timeout budget (tests/_budget.py) catches a test that takes too much of its timeout.

Each case runs pytest in a child process on a small test file of its own, with the
budget's hooks, the way scripts/test.sh runs the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent

FILE = """
import time
import pytest

@pytest.mark.timeout(16)
def test_slow():
    time.sleep(1.5)  # over 1/16 of its 16 s timeout

@pytest.mark.timeout(1000)
def test_quick():
    pass

@pytest.mark.skip(reason="never run")
def test_skipped():
    pass
"""

CONFTEST = "from _budget import *  # noqa: F403\n"


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_timed.py").write_text(FILE)
    (folder / "conftest.py").write_text(CONFTEST)
    # Only pytest and the budget's hooks: the installed plugins would only add start-up time.
    env = {**os.environ, "PYTHONPATH": str(TESTS), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_test_over_its_budget_fails_the_session_with_budget_fail(tmp_path: Path) -> None:
    figures = tmp_path / "figures.jsonl"
    done = _pytest(tmp_path, "--budget-fail", f"--budget-json={figures}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tests over 1/16 of their timeout" in done.stdout
    assert "test_timed.py::test_slow" in done.stdout
    assert "test_timed.py::test_quick" not in done.stdout.split("of their timeout")[1]
    assert "1 test(s) over budget (1 over 1/16 of their timeout: fails the session" in done.stdout
    rows = {row["nodeid"]: row for row in map(json.loads, figures.read_text().splitlines())}
    assert rows["test_timed.py::test_slow"]["timeout"] == 16
    assert rows["test_timed.py::test_slow"]["seconds"] >= 1.5
    assert rows["test_timed.py::test_quick"]["timeout"] == 1000
    assert rows["test_timed.py::test_skipped"]["outcome"] == "skipped"


def test_a_looser_fraction_or_no_budget_fail_lets_the_session_pass(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--budget-fail=4")  # 4 s for test_slow: listed, not failed
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 test(s) over budget (none over 1/4 of its timeout" in done.stdout
    # Without --budget-fail the list is only reported.
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 test(s) over budget (reported only" in done.stdout
