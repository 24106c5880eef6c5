"""Run code blocks as scripts in local subprocesses."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import sys
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from .._cancellation import CancellationToken
from ._base import CodeExecutor, CommandLineCodeResult
from ._types import CodeBlock

__all__ = ["LocalCommandLineCodeExecutor"]

TIMEOUT_EXIT_CODE = 124
"""The exit code reported for code stopped by the timeout (as coreutils ``timeout``)."""

_PYTHON = frozenset({"python", "py", "python3"})
_SHELL = frozenset({"bash", "sh", "shell"})
_EXTENSION = {**dict.fromkeys(_PYTHON, "py"), **dict.fromkeys(_SHELL, "sh")}
_DRAIN_SECONDS = 5.0  # how long to wait for output still buffered after a kill


class LocalCommandLineCodeExecutor(CodeExecutor):
    """Writes each code block to a file in ``work_dir`` and runs it as a local subprocess.

    Python blocks (``python``, ``py``, ``python3``) run with the current interpreter;
    shell blocks (``sh``, ``bash``, ``shell``) run with ``bash`` (``sh`` if there is no
    bash). Blocks run one after another in ``work_dir``; the first failing block stops
    the rest. Output is stdout and stderr interleaved as written, concatenated over the
    blocks.

    The code runs with your user's rights on this machine: only run code you trust, or
    review it first (``CodeExecutorAgent(approval_func=...)``).

    Args:
        timeout: Seconds each block may run. A block that runs longer is killed (with
            the processes it started) and reported with exit code 124 and a note.
        work_dir: Where code files are written and run; created if missing. ``None``
            uses a new temporary directory, removed by
            [`stop`][flowlib.code_executors.LocalCommandLineCodeExecutor.stop].
        cleanup_temp_files: Delete each code file after it ran.

    Raises:
        ValueError: If ``timeout`` is not positive.

    Examples:
        >>> import asyncio
        >>> from flowlib.base import CancellationToken
        >>> from flowlib.code_executors import CodeBlock
        >>> async def main() -> int:
        ...     async with LocalCommandLineCodeExecutor(timeout=10) as executor:
        ...         blocks = [CodeBlock(code="exit 3", language="sh")]
        ...         result = await executor.execute_code_blocks(blocks, CancellationToken())
        ...     return result.exit_code
        >>> asyncio.run(main())
        3
    """

    SUPPORTED_LANGUAGES: ClassVar[list[str]] = ["bash", "py", "python", "python3", "sh", "shell"]
    """Language tags this executor runs (compared case-insensitively)."""

    def __init__(
        self,
        *,
        timeout: float = 60,
        work_dir: str | Path | None = None,
        cleanup_temp_files: bool = True,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}.")
        self._timeout = timeout
        self._cleanup_temp_files = cleanup_temp_files
        self._given_work_dir = Path(work_dir) if work_dir is not None else None
        self._temp_dir: Path | None = None
        self._remove_temp_dir: weakref.finalize[[str], LocalCommandLineCodeExecutor] | None = None
        self._running: set[asyncio.subprocess.Process] = set()

    @property
    def timeout(self) -> float:
        """Seconds each block may run."""
        return self._timeout

    @property
    def work_dir(self) -> Path:
        """The directory code runs in (a temporary one is made on first use if needed)."""
        if self._given_work_dir is not None:
            self._given_work_dir.mkdir(parents=True, exist_ok=True)
            return self._given_work_dir
        if self._temp_dir is None:
            path = tempfile.mkdtemp(prefix="flowlib_code_")
            self._temp_dir = Path(path)
            # Remove it even if stop() is never called, without a ResourceWarning.
            self._remove_temp_dir = weakref.finalize(self, _remove_tree, path)
        return self._temp_dir

    async def start(self) -> None:
        """Make sure the work directory exists."""
        _ = self.work_dir

    async def stop(self) -> None:
        """Kill code still running and remove the temporary work directory, if one was made."""
        for process in list(self._running):
            _kill_group(process)
        if self._remove_temp_dir is not None:
            self._remove_temp_dir()
            self._remove_temp_dir = None
            self._temp_dir = None

    async def restart(self) -> None:
        """Stop, then start with a fresh temporary directory (a given ``work_dir`` is kept)."""
        await self.stop()
        await self.start()

    async def execute_code_blocks(
        self, code_blocks: Sequence[CodeBlock], cancellation_token: CancellationToken
    ) -> CommandLineCodeResult:
        """Run the blocks in order, stopping at the first that fails.

        Args:
            code_blocks: The blocks; each ``language`` must be one of
                [`SUPPORTED_LANGUAGES`][flowlib.code_executors.LocalCommandLineCodeExecutor.SUPPORTED_LANGUAGES].
            cancellation_token: Cancelling it kills the running block; the await raises
                ``asyncio.CancelledError``.

        Returns:
            The exit code of the last block run, the output of every block run, and the
            last code file. An unsupported language gives exit code 1 and an output that
            says so, without running that block or those after it.
        """
        outputs: list[str] = []
        exit_code = 0
        code_file: str | None = None
        for block in code_blocks:
            language = block.language.strip().lower()
            if language not in _EXTENSION:
                supported = ", ".join(self.SUPPORTED_LANGUAGES)
                outputs.append(
                    f"Unsupported language `{block.language}`: LocalCommandLineCodeExecutor "
                    f"runs only {supported} code blocks.\n"
                )
                exit_code = 1
                break
            path = self._write(block.code, _EXTENSION[language])
            code_file = str(path)
            command = self._command(language, path)
            try:
                exit_code, output = await self._run(command, cancellation_token)
            finally:
                if self._cleanup_temp_files:
                    path.unlink(missing_ok=True)
            outputs.append(output)
            if exit_code != 0:
                break
        return CommandLineCodeResult(
            exit_code=exit_code, output="".join(outputs), code_file=code_file
        )

    def _write(self, code: str, extension: str) -> Path:
        digest = hashlib.sha256(code.encode("utf-8")).hexdigest()[:16]
        path = self.work_dir / f"tmp_code_{digest}.{extension}"
        path.write_text(code if code.endswith("\n") else code + "\n", encoding="utf-8")
        return path

    @staticmethod
    def _command(language: str, path: Path) -> list[str]:
        if language in _PYTHON:
            return [sys.executable, "-u", path.name]
        shell = shutil.which("bash") or shutil.which("sh") or "sh"
        return [shell, path.name]

    async def _run(self, command: list[str], token: CancellationToken) -> tuple[int, str]:
        """Run one command in ``work_dir``; return its exit code and output."""
        if token.is_cancelled():
            raise asyncio.CancelledError()
        process = await asyncio.create_subprocess_exec(
            *command,
            cwd=self.work_dir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            # Its own process group, so a kill also reaches what the script started.
            start_new_session=os.name == "posix",
        )
        self._running.add(process)
        buffer = bytearray()
        collecting = asyncio.ensure_future(_collect(process, buffer))
        token.add_callback(collecting.cancel)
        timed_out = False
        try:
            try:
                await asyncio.wait_for(asyncio.shield(collecting), self._timeout)
            except asyncio.TimeoutError:
                timed_out = True
            except asyncio.CancelledError:
                collecting.cancel()
                await asyncio.shield(_finish(process, collecting))
                raise
            if timed_out:
                await asyncio.shield(_finish(process, collecting))
        finally:
            token.remove_callback(collecting.cancel)
            self._running.discard(process)
        output = buffer.decode("utf-8", errors="replace")
        if timed_out:
            if output and not output.endswith("\n"):
                output += "\n"
            output += f"Timeout: the code ran past the {self._timeout:g} s limit and was stopped.\n"
            return TIMEOUT_EXIT_CODE, output
        assert process.returncode is not None
        return process.returncode, output


async def _collect(process: asyncio.subprocess.Process, buffer: bytearray) -> None:
    """Read the process's output to its end, then wait for it to exit."""
    stream = process.stdout
    assert stream is not None
    while chunk := await stream.read(65536):
        buffer.extend(chunk)
    await process.wait()


async def _finish(process: asyncio.subprocess.Process, collecting: asyncio.Future[None]) -> None:
    """Kill the process group, drain what is left of its output, and reap it.

    Draining matters: the pipe (and with it the subprocess transport) only closes once
    its end of file has been read.
    """
    _kill_group(process)
    if not collecting.done():
        # Give the reader the output written before the kill, but never wait forever.
        done, _ = await asyncio.wait({collecting}, timeout=_DRAIN_SECONDS)
        if not done:
            collecting.cancel()
    if collecting.done() and not collecting.cancelled():
        collecting.exception()  # mark a reader error as retrieved; the kill explains it
    stream = process.stdout
    assert stream is not None
    try:
        await asyncio.wait_for(_discard(stream), _DRAIN_SECONDS)
        await asyncio.wait_for(process.wait(), _DRAIN_SECONDS)
    except asyncio.TimeoutError:  # pragma: no cover - a grandchild left the group
        pass


async def _discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


def _remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    try:
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - not exercised on POSIX CI
            process.kill()
    except ProcessLookupError:
        pass
