"""The README's first example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_readme_quick_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "README has no python example"
    completed = subprocess.run(
        [sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "Digraph execution is complete"


def test_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    text = README.read_text()
    assert "./scripts/demo.sh" in text and "./scripts/test.sh" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci


def test_quickstart_example_runs_and_prints_what_the_page_says() -> None:
    page = (README.parent / "docs" / "quickstart.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    completed = subprocess.run(
        [sys.executable, "-c", blocks[0]], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == "['writer', 'critic', 'writer', 'critic']"
    assert lines[1].startswith("Digraph execution is complete: node `critic`")


def test_readme_says_how_to_call_the_installed_tools() -> None:
    """The tools live in .venv/bin: the README says to call them there or activate it."""
    text = README.read_text()
    assert "source .venv/bin/activate" in text
    assert ".venv/bin/flowlib" in text and ".venv/bin/python examples/" in text
    examples_page = (README.parent / "docs" / "examples.md").read_text()
    assert "python examples/<file>.py" in examples_page
    assert "source .venv/bin/activate" in examples_page
