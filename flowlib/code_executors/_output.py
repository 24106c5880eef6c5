"""Output kept from a running script: a fixed number of bytes, however much it prints."""

from __future__ import annotations

__all__ = ["CappedOutput"]


class CappedOutput:
    """Keeps at most ``limit`` bytes of a stream: its first half and its last half.

    The middle is dropped as it arrives, so memory stays bounded by ``limit`` whatever
    the script prints. The head shows how the output began, the tail how it ended (a
    traceback is at the end). `text()` puts a note where bytes were left out.

    Examples:
        >>> output = CappedOutput(8)
        >>> output.feed(b"abcdefghijkl")
        >>> output.dropped
        4
        >>> print(output.text())
        abcd
        [... 4 bytes of output left out: the limit is 8 bytes (max_output_bytes) ...]
        ijkl
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._head_limit = limit - limit // 2
        self._tail_limit = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0
        """Bytes read and left out."""

    @property
    def kept(self) -> int:
        """Bytes held now (never more than ``limit``)."""
        return len(self._head) + len(self._tail)

    def feed(self, chunk: bytes) -> None:
        """Add the next bytes of the stream."""
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        if len(chunk) >= self._tail_limit:
            self.dropped += len(self._tail) + len(chunk) - self._tail_limit
            self._tail = bytearray(chunk[len(chunk) - self._tail_limit :])
            return
        overflow = len(self._tail) + len(chunk) - self._tail_limit
        if overflow > 0:
            del self._tail[:overflow]
            self.dropped += overflow
        self._tail += chunk

    def text(self) -> str:
        """The kept output as text, with a note where bytes were left out."""
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if not self.dropped:
            return (self._head + self._tail).decode("utf-8", errors="replace")
        if not head.endswith("\n"):
            head += "\n"
        note = (
            f"[... {self.dropped} bytes of output left out: the limit is {self.limit} bytes "
            "(max_output_bytes) ...]\n"
        )
        return head + note + tail
