"""Text for a terminal: control characters shown, not obeyed (issue 21.5).

Model replies, tool results and stored runs are not trusted, and a terminal obeys the
control characters in what it is sent: an escape sequence can set the window title,
write the clipboard (OSC 52), move the cursor, or erase a line to print a fake
"all tests passed". So every text flowlib prints to a terminal goes through
[`escape_control`][flowlib.ui.escape_control]: each control character other than a
newline or a tab is written as its visible escape (``\\x1b``, ``\\r``, ``\\u202e``),
which a terminal shows as those characters. The escaping is idempotent (its output
holds no control character), so text escaped twice reads the same.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

__all__ = ["TerminalWriter", "escape_control", "escapes"]

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode format characters
# that reorder or hide text (bidirectional overrides and isolates, zero-width joiners
# are kept: they occur in ordinary emoji and scripts).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\x08": "\\b", "\x07": "\\a"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """``text`` with every control character but newline and tab made visible.

    Examples:
        >>> escape_control("ok\\x1b]0;pwned\\x07\\r\\nnext\\tline")
        'ok\\\\x1b]0;pwned\\\\a\\\\r\\nnext\\tline'
    """
    return _CONTROL.sub(_visible, text)


class TerminalWriter:
    """A text stream that escapes control characters in everything written to it.

    ``write_trusted`` writes flowlib's own sequences (an iTerm2 inline image) as they
    are; everything else (attribute access, ``flush``, ``isatty``) goes to the
    wrapped stream.

    Args:
        stream: The stream to write to (``sys.stdout``).
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        """Write ``text`` with its control characters escaped."""
        return self.stream.write(escape_control(text))

    def write_trusted(self, text: str) -> int:
        """Write ``text`` as it is (sequences flowlib made itself)."""
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def escapes(stream: object) -> bool:
    """Whether ``stream`` escapes what is written to it (a ``TerminalWriter``): the
    command line's ``--raw`` leaves its streams plain, and ``Console`` follows."""
    return isinstance(stream, TerminalWriter)
