"""Model text does not control the terminal (issue 21.5): `Console` and the `flowlib`
command line write control characters in model, tool, agent and stored text escaped
(newlines and tabs kept), checked on the bytes a terminal would receive; `raw=True` /
`--raw` writes them as they are."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowlib.cli import main
from flowlib.messages import ModelClientStreamingChunkEvent, MultiModalMessage, TextMessage
from flowlib.models import Image
from flowlib.teams import RoundRobinGroupChat
from flowlib.testing import ScriptedAgent
from flowlib.ui import Console, TerminalWriter, escape_control

TITLE = "\x1b]0;pwned\x07"  # sets the window title
CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # writes the clipboard (OSC 52)
FAKE = "\r\x1b[2K\x1b[32mall tests passed\x1b[0m"  # erases the line, prints in green
BIDI = "\u202eevil"  # reverses the text that follows
HOSTILE = f"ok{TITLE}{CLIPBOARD}\nline\ttab{FAKE}{BIDI}\x9b31m\x00"
CONTROLS = set("\x1b\x07\r\x00\x9b\u202e")


def controls_in(text: str) -> set[str]:
    return CONTROLS & set(text)


def test_escape_control_keeps_newlines_and_tabs_and_is_idempotent() -> None:
    escaped = escape_control(HOSTILE)
    assert controls_in(escaped) == set()
    assert "\nline\ttab" in escaped
    assert "\\x1b]0;pwned\\a" in escaped and "\\r\\x1b[2K" in escaped
    assert "\\u202eevil" in escaped and "\\x9b31m\\x00" in escaped
    assert escape_control(escaped) == escaped
    assert escape_control("plain — ünïcödé ✓ 👍🏽") == "plain — ünïcödé ✓ 👍🏽"


async def console_output(raw: bool = False, **options: object) -> str:
    agent = ScriptedAgent("bot", [HOSTILE])
    team = RoundRobinGroupChat([agent], max_turns=1)
    out = io.StringIO()
    await Console(team.run_stream(task=f"task{CLIPBOARD}"), output=out, raw=raw, **options)  # type: ignore[arg-type]
    return out.getvalue()


async def test_console_escapes_model_agent_and_task_text() -> None:
    text = await console_output()
    assert controls_in(text) == set()
    assert "ok\\x1b]0;pwned\\a\\x1b]52;c;ZWNobyBwd25lZA==\\a\nline\ttab\\r" in text
    assert "task\\x1b]52;c;" in text


async def test_console_raw_prints_text_as_it_is() -> None:
    text = await console_output(raw=True)
    assert controls_in(text) == CONTROLS


async def test_streamed_chunks_are_escaped() -> None:
    async def stream():  # type: ignore[no-untyped-def]
        yield ModelClientStreamingChunkEvent(content=FAKE, source="bot")
        yield ModelClientStreamingChunkEvent(content=TITLE, source="bot")
        from flowlib.base import TaskResult

        yield TaskResult(messages=[], stop_reason=f"stop{TITLE}")

    out = io.StringIO()
    await Console(stream(), output=out, output_stats=True)
    assert controls_in(out.getvalue()) == set()
    assert "\\r\\x1b[2K" in out.getvalue() and "stop\\x1b]0;pwned\\a" in out.getvalue()


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_inline_images_stay_drawable_while_their_text_is_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TERM_PROGRAM", "iTerm.app")
    image = Image(b"\x89PNG\r\n\x1a\n" + bytes(16))
    message = MultiModalMessage(content=[f"look{TITLE}", image], source="bot")

    async def stream():  # type: ignore[no-untyped-def]
        yield message
        from flowlib.base import TaskResult

        yield TaskResult(messages=[message], stop_reason="done")

    out = Tty()
    await Console(stream(), output=out)
    text = out.getvalue()
    assert f"\x1b]1337;File=inline=1:{image.to_base64()}\x07" in text  # flowlib's own
    assert "look\\x1b]0;pwned\\a\n" in text
    assert text.count("\x1b") == 1


def test_terminal_writer_escapes_writes_but_not_trusted_ones() -> None:
    out = io.StringIO()
    writer = TerminalWriter(out)
    writer.write(TITLE)
    writer.write_trusted("\x1b[0m")
    assert out.getvalue() == "\\x1b]0;pwned\\a\x1b[0m"
    assert writer.getvalue() == out.getvalue()  # the rest goes to the stream


FLOW = f"""
from flowlib.teams import DiGraphBuilder, GraphFlow


def talker(messages):
    return {HOSTILE!r}


def build():
    builder = DiGraphBuilder().add_node(talker)
    return GraphFlow(builder.get_participants(), builder.build())
"""


@pytest.fixture
def hostile_flow(tmp_path: Path) -> Path:
    path = tmp_path / "flow.py"
    path.write_text(FLOW)
    return path


def cli_bytes(*args: str) -> bytes:
    """The bytes ``flowlib ARGS`` writes to its stdout, as a terminal would get them."""
    completed = subprocess.run(
        [sys.executable, "-m", "flowlib", *args],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_flowlib_run_writes_no_control_bytes(hostile_flow: Path) -> None:
    escaped = cli_bytes("run", f"{hostile_flow}:build", "--task", "go")
    assert not set(escaped) & {0x1B, 0x07, 0x0D, 0x00}
    assert "\u202e".encode() not in escaped and "\x9b".encode() not in escaped
    assert b"ok\\x1b]0;pwned\\a" in escaped and b"\nline\ttab" in escaped
    raw = cli_bytes("run", f"{hostile_flow}:build", "--task", "go", "--raw")
    assert TITLE.encode() in raw and FAKE.encode() in raw


def test_every_cli_line_goes_through_the_escaping(hostile_flow: Path) -> None:
    """In-process: the error line too (a message built from model or store text)."""
    bad = hostile_flow.with_name(f"no{TITLE}such.py")
    out = io.StringIO()
    err = io.StringIO()
    old = sys.stderr
    sys.stderr = err
    try:
        assert main(["validate", f"{bad}:x"], out=out) != 0
    finally:
        sys.stderr = old
    assert controls_in(err.getvalue()) == set()
    assert "no\\x1b]0;pwned\\asuch.py" in err.getvalue()
    assert isinstance(TextMessage(content="x", source="y"), TextMessage)
