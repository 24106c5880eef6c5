"""docs/state.md's "Writing recovery code" example runs as written and prints what the
page says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_recovery_example_runs() -> None:
    page = (ROOT / "docs" / "state.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- recovery-example -->\n```python\n(.*?)```", page, flags=re.DOTALL)
    assert block is not None, "docs/state.md lost its recovery example"
    completed = subprocess.run(
        [sys.executable, "-c", block.group(1)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "notes-42 -> Maximum number of turns 6 reached.",
        "refused: notes-4two",
    ]
