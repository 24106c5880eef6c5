"""docs/mcp.md shows what examples/mcp_tools.py prints about resources, resource
templates and prompts: the page's output block is checked against a real run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_resources_section_shows_the_examples_output() -> None:
    page = (ROOT / "docs" / "mcp.md").read_text()
    section = page.split("## Resources, resource templates and prompts", 1)[1].split("\n## ")[0]
    shown = re.findall(r"```text\n(.*?)```", section, re.S)[0].strip().splitlines()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [sys.executable, "examples/mcp_tools.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert printed[1 : 1 + len(shown)] == shown
