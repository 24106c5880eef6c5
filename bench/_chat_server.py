"""A local Chat Completions server for the ``realclient`` shape, in its own process.

It is the test suite's server (``tests/openai_server.py``), answering every request at
once with the same short reply (streamed when asked) and recording nothing, so the
client process being measured does no server work. Prints its base URL, then serves
until its standard input closes.

Run as ``python -m bench._chat_server``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from openai_server import OpenAIServer, RecordedRequest, Reply

REPLY = "Noted, carrying on with the plan."


class InstantServer(OpenAIServer):
    """Answers everything with one reply and keeps no request."""

    def _record(self, request: RecordedRequest) -> Any:
        return Reply(REPLY, usage=(10, 7))


def main() -> None:
    server = InstantServer().start()
    print(server.base_url, flush=True)
    try:
        sys.stdin.read()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
