"""Without Ray, flowlib.distributed says what to install; flowlib.batch still works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]

SCRIPT = """
import sys
sys.modules["ray"] = None  # as if Ray were not installed
try:
    import flowlib.distributed
except ImportError as exc:
    print(type(exc).__name__, exc)
import flowlib.batch
print("batch ok", flowlib.batch.LocalRunner.__name__)
"""


def test_without_ray_the_error_says_what_to_install() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, check=True
    )
    first, second = done.stdout.splitlines()
    assert first.startswith("RayNotInstalledError flowlib.distributed needs Ray")
    assert "pip install 'flowlib[ray]'" in first
    assert second == "batch ok LocalRunner"
