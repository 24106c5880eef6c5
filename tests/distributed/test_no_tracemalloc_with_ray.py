"""No tracemalloc in code that runs in a process joined to Ray.

``tracemalloc.stop()`` races with threads that allocate while they wait for the GIL,
and Ray's threads do that whenever they hand a reply to Python: on CPython before
3.12.9 the race segfaults the process in tracemalloc's ``traceback_new``
(python/cpython#128679). The driver memory test once measured with tracemalloc and, in a
whole run of the suite, took its pytest worker down with it (Ray's driver log:
``SIGSEGV received ... traceback_new``). This check reads the sources, so it fails
whether or not the race happens to strike.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]

# Code that runs in a Ray driver or worker: the Ray tests, the Ray runner, the benchmark
# that starts a cluster.
JOINED = [
    *sorted((ROOT / "tests" / "distributed").glob("test_ray_*.py")),
    *sorted((ROOT / "flowlib" / "distributed").glob("*.py")),
    ROOT / "tests" / "_batch_flows.py",
    ROOT / "bench" / "throughput.py",
]


def tracemalloc_uses(source: str) -> list[int]:
    """Lines that import tracemalloc (``import tracemalloc``, ``from tracemalloc ...``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(name.split(".")[0] == "tracemalloc" for name in names):
            lines.append(node.lineno)
    return lines


def test_the_check_finds_an_import_inside_a_function() -> None:
    source = "def f():\n    import gc\n    import tracemalloc\n    from tracemalloc import stop\n"
    assert tracemalloc_uses(source) == [3, 4]
    assert tracemalloc_uses('"""tracemalloc races with Ray."""\nimport gc\n') == []


def test_code_that_joins_ray_does_not_use_tracemalloc() -> None:
    assert all(path.is_file() for path in JOINED), JOINED
    found = {
        str(path.relative_to(ROOT)): uses
        for path in JOINED
        if (uses := tracemalloc_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}, (
        "tracemalloc in a process joined to Ray can segfault it (python/cpython#128679); "
        f"measure with sys.getallocatedblocks() or RSS instead: {found}"
    )
