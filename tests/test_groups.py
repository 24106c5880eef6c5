"""The Ray cluster tests run in one pytest-xdist worker (tests/_groups.py), before anything
else there: a child pytest with two workers and the suite's grouping hook runs files named
like them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

FILE = """
import os, time
from pathlib import Path

def _note(name):
    time.sleep(0.2)
    with open(Path(__file__).parents[2] / "workers.txt", "a") as out:
        out.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""


@pytest.mark.slow
@pytest.mark.timeout(300)  # a child pytest starting two workers: seconds of CPU
@pytest.mark.parametrize("reorder", ["--loadscope-reorder", "--no-loadscope-reorder"])
def test_the_ray_tests_share_one_worker_and_start_first(tmp_path: Path, reorder: str) -> None:
    folder = tmp_path / "tests" / "distributed"
    folder.mkdir(parents=True)
    for name in ("test_ray_one", "test_ray_two", "test_other"):
        tests = "".join(f"\ndef test_{i}():\n    _note('{name}')\n" for i in range(6))
        (folder / f"{name}.py").write_text(FILE + tests)
    (tmp_path / "conftest.py").write_text("from _groups import *  # noqa: F403\n")
    env = {**os.environ, "PYTHONPATH": str(TESTS), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    args = ["-p", "xdist", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-q"]
    args.append(reorder)  # xdist puts the largest group first by default; not relied on
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    seen = [line.split() for line in (tmp_path / "workers.txt").read_text().splitlines()]
    assert len(seen) == 18
    ray = {worker for name, worker in seen if name.startswith("test_ray_")}
    assert len(ray) == 1, seen
    # The Ray group is the run's longest chain: its worker starts with it (test_other,
    # first by name, goes to the other worker).
    first = next(name for name, worker in seen if worker in ray)
    assert first.startswith("test_ray_"), seen
