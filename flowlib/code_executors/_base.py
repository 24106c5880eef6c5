"""The code-executor interface, its command-line result, and markdown code-block extraction."""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from .._cancellation import CancellationToken
from .._lifecycle import AsyncResource
from ._types import CodeBlock, CodeResult

__all__ = ["CodeExecutor", "CommandLineCodeResult", "extract_markdown_code_blocks"]


class CommandLineCodeResult(CodeResult):
    """The outcome of running code blocks as scripts on a command line.

    Attributes:
        exit_code: The exit code of the last script run; 0 means every block succeeded.
        output: What the scripts wrote to stdout and stderr, interleaved as written.
        code_file: The file the last block was written to before it ran (``None`` when no
            file was written, e.g. for an unsupported language).
    """

    code_file: str | None = None


class CodeExecutor(AsyncResource):
    """Runs code blocks and reports their combined result.

    Executors are async context managers: ``async with executor:`` calls
    [`start`][flowlib.code_executors.CodeExecutor.start] and, on the way out,
    [`stop`][flowlib.code_executors.CodeExecutor.stop].

    Examples:
        >>> import asyncio
        >>> from flowlib.code_executors import CodeBlock, LocalCommandLineCodeExecutor
        >>> from flowlib.base import CancellationToken
        >>> async def main() -> str:
        ...     async with LocalCommandLineCodeExecutor() as executor:
        ...         result = await executor.execute_code_blocks(
        ...             [CodeBlock(code="print(6 * 7)", language="python")], CancellationToken()
        ...         )
        ...     return result.output
        >>> asyncio.run(main())
        '42\\n'
    """

    component_type: ClassVar[str] = "code_executor"

    @abstractmethod
    async def execute_code_blocks(
        self, code_blocks: Sequence[CodeBlock], cancellation_token: CancellationToken
    ) -> CodeResult:
        """Run ``code_blocks`` in order and return their combined result.

        Args:
            code_blocks: The blocks to run.
            cancellation_token: Cancelling it stops the running code; the await raises
                ``asyncio.CancelledError``.
        """

    @abstractmethod
    async def start(self) -> None:
        """Acquire what the executor needs (a container, a directory, ...)."""

    @abstractmethod
    async def stop(self) -> None:
        """Release what [`start`][flowlib.code_executors.CodeExecutor.start] acquired and stop any
        code still running."""

    @abstractmethod
    async def restart(self) -> None:
        """Stop and start again, dropping any state the executed code left behind."""


# An opening fence: three or more backticks, then an optional language tag and whatever
# else the info string holds (ignored). The closing fence must be as long or longer.
_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,})[ \t]*(?P<lang>[^\s`]*)[^`\n]*$")
_CLOSE = re.compile(r"^[ \t]*(?P<fence>`{3,})[ \t]*$")
# A closing fence glued to the last code line (``print(1)```), as models often write.
_GLUED_CLOSE = re.compile(r"^(?P<code>.*[^`\s].*?)(?P<fence>`{3,})[ \t]*$")


def extract_markdown_code_blocks(markdown_text: str) -> list[CodeBlock]:
    """Find the fenced code blocks (```` ```lang ... ``` ````) in markdown text.

    Fences must start their lines (indentation is allowed); the language is the first
    word of the info string, empty if there is none. A closing fence may also end the
    last code line (```` print(1)``` ````). A block that is never closed is left out, so
    half-written code is never run.

    Args:
        markdown_text: The text to search, e.g. a model answer.

    Returns:
        The blocks in order, their code without the fence lines.

    Examples:
        >>> extract_markdown_code_blocks("Run this:\\n```python\\nprint('hi')\\n```\\n")
        [CodeBlock(code="print('hi')", language='python')]
    """
    blocks: list[CodeBlock] = []
    fence: str | None = None
    language = ""
    body: list[str] = []
    for line in markdown_text.splitlines():
        if fence is None:
            opening = _OPEN.match(line)
            if opening is not None:
                fence, language, body = opening["fence"], opening["lang"], []
            continue
        closing = _CLOSE.match(line)
        if closing is not None and len(closing["fence"]) >= len(fence):
            blocks.append(CodeBlock(code="\n".join(body), language=language))
            fence = None
            continue
        glued = _GLUED_CLOSE.match(line)
        if glued is not None and len(glued["fence"]) >= len(fence):
            blocks.append(CodeBlock(code="\n".join([*body, glued["code"]]), language=language))
            fence = None
            continue
        body.append(line)
    return blocks
