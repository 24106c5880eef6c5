"""Code execution: code blocks, results and (later) the executors that run them."""

from ._types import CodeBlock, CodeResult

__all__ = [
    "CodeBlock",
    "CodeResult",
]
