"""tests/_forked.py runs a child script as ``python SCRIPT ARGS`` would: a separate process
(really killed by SIGKILL), its exit status, output, ``sys.argv``, ``sys.path`` and
environment, atexit handlers, and a hang guard that kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from _forked import run_script, start_script

SCRIPT = """
import atexit, os, signal, sys, time
from pathlib import Path

out = Path(sys.argv[1])
what = sys.argv[2]
atexit.register(lambda: (out / "atexit").write_text("ran"))
(out / "pid").write_text(str(os.getpid()))
(out / "argv").write_text(" ".join(sys.argv[2:]))
(out / "path").write_text(sys.path[0] + "\\n" + sys.path[1])
(out / "env").write_text(os.environ.get("FORKED_TEST", ""))
(out / "environ").write_text(" ".join(sorted(os.environ)))
(out / "cwd").write_text(os.getcwd())
print("to stdout")
print("to stderr", file=sys.stderr)
if what == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if what == "raise":
    raise LookupError("from the child")
if what == "hang":
    time.sleep(600)
sys.exit(int(what))
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "child" / "script.py"
    path.parent.mkdir()
    path.write_text(SCRIPT)
    return path


def test_a_child_exits_with_its_status_output_and_arguments(tmp_path: Path, script: Path) -> None:
    env = {"FORKED_TEST": "x"}
    done = run_script(script, str(tmp_path), "3", "extra", paths=[tmp_path], env=env)
    assert (done.returncode, done.stdout, done.stderr) == (3, "to stdout\n", "to stderr\n")
    assert (tmp_path / "argv").read_text() == "3 extra"
    assert (tmp_path / "path").read_text() == f"{script.parent}\n{tmp_path}"
    assert (tmp_path / "env").read_text() == "x"
    assert "FORKED_TEST" not in os.environ
    assert (tmp_path / "atexit").read_text() == "ran"  # ends as an interpreter ends
    assert int((tmp_path / "pid").read_text()) != os.getpid()


def test_a_child_gets_only_the_given_environment_and_folder_when_asked(
    tmp_path: Path, script: Path
) -> None:
    """As ``subprocess.run(..., env=ENV, cwd=FOLDER)``: nothing of the test process's own
    environment reaches the child (the examples run this way, without OPENAI_API_KEY)."""
    os.environ["FORKED_TEST_OUTSIDE"] = "1"
    try:
        done = run_script(
            script, str(tmp_path), "0", env={"FORKED_TEST": "y"}, clean_env=True, cwd=script.parent
        )
    finally:
        del os.environ["FORKED_TEST_OUTSIDE"]
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "environ").read_text() == "FORKED_TEST"
    assert (tmp_path / "cwd").read_text() == str(script.parent)
    done = run_script(script, str(tmp_path), "0")
    assert "PATH" in (tmp_path / "environ").read_text().split()  # by default: inherited
    assert (tmp_path / "cwd").read_text() == os.getcwd()


def test_a_child_killed_by_sigkill_reports_it_and_runs_no_exit_code(
    tmp_path: Path, script: Path
) -> None:
    done = run_script(script, str(tmp_path), "kill")
    assert done.returncode == -signal.SIGKILL
    assert not (tmp_path / "atexit").exists()
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone and reaped


def test_an_uncaught_exception_exits_1_with_its_traceback(tmp_path: Path, script: Path) -> None:
    done = run_script(script, str(tmp_path), "raise")
    assert done.returncode == 1
    assert "LookupError: from the child" in done.stderr


def test_a_child_past_its_timeout_is_killed(tmp_path: Path, script: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_script(script, str(tmp_path), "hang", timeout=1)
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert run_script(script, str(tmp_path), "0").returncode == 0  # the zygote still serves


def test_a_started_child_is_killed_from_outside(tmp_path: Path, script: Path) -> None:
    with start_script(script, str(tmp_path), "hang") as child:
        while not (tmp_path / "env").exists():  # the child has written what it writes first
            time.sleep(0.01)
        assert int((tmp_path / "pid").read_text()) == child.pid
        child.kill()
        done = child.wait(60)
    assert done.returncode == -signal.SIGKILL
    assert not (tmp_path / "atexit").exists()
    with start_script(script, str(tmp_path), "hang"):
        pass  # left without a wait: killed and reaped on the way out
    assert run_script(script, str(tmp_path), "0").returncode == 0
