"""Value types of code execution: a code block and the result of running it."""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["CodeBlock", "CodeResult"]


class CodeBlock(BaseModel):
    """A block of code extracted from a model answer.

    Attributes:
        code: The source code.
        language: The language tag of the block, e.g. ``"python"`` or ``"bash"``.
    """

    code: str
    language: str


class CodeResult(BaseModel):
    """The outcome of running code.

    Attributes:
        exit_code: The process exit code; 0 means success.
        output: The combined output of the run.
    """

    exit_code: int
    output: str
