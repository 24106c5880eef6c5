"""Run a documentation page: its ``python`` blocks, in order, as one program.

A ``text`` block that comes right after a ``python`` block (the next fenced block on the
page) is that block's output: what the block prints must be exactly that text (trailing
spaces aside). Other fenced blocks (``sh``, ``toml``, a ``text`` block after prose) are
not run.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from _forked import run_script

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", flags=re.DOTALL | re.MULTILINE)
MARK = "\x1e-- end of block --\x1e"


@dataclass
class Block:
    code: str
    expected: str | None  # the output the page shows, if it shows one


def python_blocks(page: Path) -> list[Block]:
    fences = [(m.group(1), m.group(2)) for m in FENCE.finditer(page.read_text())]
    blocks = []
    for index, (language, body) in enumerate(fences):
        if language != "python":
            continue
        following = fences[index + 1] if index + 1 < len(fences) else None
        expected = following[1] if following and following[0] == "text" else None
        blocks.append(Block(body, expected))
    return blocks


def _tidy(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def run_page(
    page: Path, *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> list[tuple[Block, str]]:
    """Run the page; return each block with what it printed. Raises on a failed run."""
    blocks = python_blocks(page)
    assert blocks, f"{page} has no python block"
    program = f"\nprint({MARK!r}, flush=True)\n".join(block.code for block in blocks)
    program += f"\nprint({MARK!r}, flush=True)\n"
    # ``python -c PROGRAM`` in the folder, with this checkout and examples/ on the path, as a
    # fork of tests/_forked.py's zygote (flowlib imported already; docs/choices.md, "The
    # test command's speed").
    folder = Path(cwd or ROOT).resolve()
    with tempfile.TemporaryDirectory(prefix="flowlib-page-") as scratch:
        script = Path(scratch, "page.py")
        script.write_text(program)
        completed = run_script(
            script,
            paths=[folder, ROOT, ROOT / "examples"],
            cwd=folder,
            timeout=timeout,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "examples")]),
                **(env or {}),
            },
            clean_env=True,  # this process's environment as it is now, as before
        )
    assert completed.returncode == 0, f"{page.name} failed:\n{completed.stderr}"
    outputs = completed.stdout.split(MARK + "\n")
    return list(zip(blocks, outputs, strict=False))


def check_page(page: Path, **kwargs: object) -> None:
    """Run the page and compare every shown output with what its block printed."""
    for block, printed in run_page(page, **kwargs):  # type: ignore[arg-type]
        if block.expected is not None:
            assert _tidy(printed) == _tidy(block.expected), (
                f"{page.name}: the block\n{block.code}\nprinted\n{printed}\n"
                f"but the page shows\n{block.expected}"
            )


if __name__ == "__main__":  # print each block's output, to write a page
    for block, printed in run_page(Path(sys.argv[1])):
        print(f"===== {block.code.splitlines()[0] if block.code else ''}\n{printed}")
