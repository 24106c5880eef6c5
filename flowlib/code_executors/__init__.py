"""Code execution: code blocks, results, the executor interface and a local executor."""

from ._base import CodeExecutor, CommandLineCodeResult, extract_markdown_code_blocks
from ._local import LocalCommandLineCodeExecutor
from ._types import CodeBlock, CodeResult

__all__ = [
    "CodeBlock",
    "CodeExecutor",
    "CodeResult",
    "CommandLineCodeResult",
    "LocalCommandLineCodeExecutor",
    "extract_markdown_code_blocks",
]
