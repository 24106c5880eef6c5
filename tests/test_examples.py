"""Every file in examples/ runs offline (STYLE: examples run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def test_there_are_examples() -> None:
    assert EXAMPLES, "examples/ has no .py files"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_offline(path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"}  # no OPENAI_API_KEY: offline
    completed = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip(), "an example should print what it does"
    header = path.read_text().split('"""')[1]
    assert "python examples/" in header, "the header says how to run it"
