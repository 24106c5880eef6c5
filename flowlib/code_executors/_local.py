"""Run code blocks as scripts in local subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from .._cancellation import CancellationToken
from ..component.internal import register_builtin
from ..errors import ArgumentTypeError, InvalidArgumentError
from ._base import CodeExecutor, CommandLineCodeResult
from ._output import CappedOutput
from ._processes import Execution, start_execution
from ._types import CodeBlock

__all__ = ["LocalCommandLineCodeExecutor"]

TIMEOUT_EXIT_CODE = 124
"""The exit code reported for code stopped by the timeout (as coreutils ``timeout``)."""

_PYTHON = frozenset({"python", "py", "python3"})
_SHELL = frozenset({"bash", "sh", "shell"})
_EXTENSION = {**dict.fromkeys(_PYTHON, "py"), **dict.fromkeys(_SHELL, "sh")}
DEFAULT_MAX_OUTPUT_BYTES = 1_048_576
"""Output kept per execution by default (1 MiB); the rest is left out with a note."""

_DRAIN_SECONDS = 2.0  # how long to wait for output still buffered after a kill
_NOT_ALL_STOPPED = (
    "Warning: processes the code started in the background could not all be stopped; "
    "they may still be running.\n"
)
_LEFTOVER_SECONDS = 0.5  # how long background processes may hold the output after the script


class LocalExecutorConfig(BaseModel):
    """The config of
    [`LocalCommandLineCodeExecutor`][flowlib.code_executors.LocalCommandLineCodeExecutor]."""

    model_config = ConfigDict(extra="forbid")

    timeout: float = 60
    work_dir: str | None = None
    cleanup_temp_files: bool = True


class LocalCommandLineCodeExecutor(CodeExecutor):
    """Writes each code block to a file in ``work_dir`` and runs it as a local subprocess.

    Python blocks (``python``, ``py``, ``python3``) run with the current interpreter;
    shell blocks (``sh``, ``bash``, ``shell``) run with ``bash`` (``sh`` if there is no
    bash). Blocks run one after another in ``work_dir``; the first failing block stops
    the rest. Output is stdout and stderr interleaved as written, concatenated over the
    blocks. Every execution writes its own file, so identical blocks run at once do not
    clash.

    The code runs with your user's rights on this machine: this is not a sandbox (see
    ``docs/security.md``). Only run code you trust, or review it first
    (``CodeExecutorAgent(approval_func=...)``).

    When the timeout or a cancellation stops a block, or something it started still
    holds its output after it ended, everything it started is killed too, including
    processes that left its process group with ``setsid`` or changed their PID by
    forking (on Linux each block runs under a small subreaper process for this; see
    ``docs/security.md`` for how and for the limits).

    Args:
        timeout: Seconds each block may run. A block that runs longer is killed (with
            the processes it started) and reported with exit code 124 and a note.
        work_dir: Where code files are written and run; created if missing. ``None``
            uses a new temporary directory, removed by
            [`stop`][flowlib.code_executors.LocalCommandLineCodeExecutor.stop].
        cleanup_temp_files: Delete each code file after it ran.
        max_output_bytes: Output kept per block. Beyond it, the first and last halves
            are kept and a note in between says how many bytes were left out; the rest
            is read and dropped as it arrives, so memory does not grow with the output.

    Raises:
        InvalidArgumentError: If ``timeout`` or ``max_output_bytes`` is not positive
            (also a ``ValueError``).

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
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    ) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise ArgumentTypeError(
                f"`timeout` must be a number of seconds, not {type(timeout).__name__}.",
                argument="timeout",
            )
        if not timeout > 0:
            raise InvalidArgumentError(
                f"`timeout` must be a positive number of seconds, not {timeout!r}.",
                argument="timeout",
            )
        if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int):
            raise ArgumentTypeError(
                "`max_output_bytes` must be an int (bytes), "
                f"not {type(max_output_bytes).__name__}.",
                argument="max_output_bytes",
            )
        if max_output_bytes <= 0:
            raise InvalidArgumentError(
                f"`max_output_bytes` must be positive, not {max_output_bytes!r}.",
                argument="max_output_bytes",
            )
        self._timeout = timeout
        self._max_output_bytes = max_output_bytes
        self._cleanup_temp_files = cleanup_temp_files
        self._given_work_dir = Path(work_dir) if work_dir is not None else None
        self._temp_dir: Path | None = None
        self._remove_temp_dir: weakref.finalize[[str], LocalCommandLineCodeExecutor] | None = None
        self._running: set[Execution] = set()

    @property
    def timeout(self) -> float:
        """Seconds each block may run."""
        return self._timeout

    component_config_schema: ClassVar[type[BaseModel]] = LocalExecutorConfig

    def _to_config(self) -> LocalExecutorConfig:
        work_dir = None if self._given_work_dir is None else str(self._given_work_dir)
        return LocalExecutorConfig(
            timeout=self._timeout, work_dir=work_dir, cleanup_temp_files=self._cleanup_temp_files
        )

    @classmethod
    def _from_config(cls, config: LocalExecutorConfig) -> Self:
        return cls(**config.model_dump())  # the config's fields are options, by name

    @property
    def max_output_bytes(self) -> int:
        """Output bytes kept per block (the rest is left out with a note)."""
        return self._max_output_bytes

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
        for execution in list(self._running):
            execution.kill_now()
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
        # The hash keeps names readable and stable in logs; the random part makes every
        # execution's file its own, so identical blocks run at once never share a file.
        digest = hashlib.sha256(code.encode("utf-8")).hexdigest()[:12]
        handle, name = tempfile.mkstemp(
            prefix=f"tmp_code_{digest}_", suffix=f".{extension}", dir=self.work_dir
        )
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(code if code.endswith("\n") else code + "\n")
        return Path(name)

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
        # Our own pipe (not asyncio's PIPE): its inode finds every process that still
        # holds the write end, wherever it moved (``setsid``, double fork).
        read_fd, write_fd = os.pipe()
        try:
            execution = await start_execution(command, self.work_dir, write_fd)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self._running.add(execution)
        output = CappedOutput(self._max_output_bytes)
        pipe = _Pipe(read_fd)
        reading = asyncio.ensure_future(pipe.read_into(output))
        exiting = asyncio.ensure_future(execution.exited())
        cancelled: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_cancel() -> None:
            if not cancelled.done():
                cancelled.set_result(None)

        token.add_callback(on_cancel)
        all_stopped = True
        try:
            try:
                # The script must end within the timeout; then what it left running in
                # the background may hold the output open a moment longer, no more.
                timed_out = not await _ends_within(exiting, cancelled, self._timeout)
                left_running = not timed_out and not await _ends_within(
                    reading, cancelled, _LEFTOVER_SECONDS
                )
                if timed_out or left_running:
                    all_stopped = await asyncio.shield(_stop(execution, pipe, reading))
                else:
                    # Nothing holds the output: what still runs let go of it on
                    # purpose (a daemon); it is not ours to kill.
                    execution.release()
                    if not reading.cancelled():
                        reading.result()  # a reader error is a real error
            except asyncio.CancelledError:
                await asyncio.shield(_stop(execution, pipe, reading))
                raise
        finally:
            token.remove_callback(on_cancel)
            self._running.discard(execution)
            if not exiting.done():
                # Left by an error: kill it (a no-op when it was already stopped).
                execution.kill_now()
            exiting.cancel()
            reading.cancel()
            pipe.close()
            await asyncio.shield(execution.close())
        text = output.text()
        if timed_out:
            if text and not text.endswith("\n"):
                text += "\n"
            text += f"Timeout: the code ran past the {self._timeout:g} s limit and was stopped.\n"
            if not all_stopped:
                text += _NOT_ALL_STOPPED
            return TIMEOUT_EXIT_CODE, text
        if left_running:
            if text and not text.endswith("\n"):
                text += "\n"
            text += (
                "Note: processes the code left running in the background were stopped.\n"
                if all_stopped
                else _NOT_ALL_STOPPED
            )
        return exiting.result(), text


class _Pipe:
    """The read end of a child's output pipe, read through the event loop."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.inode = os.fstat(fd).st_ino
        self._transport: asyncio.ReadTransport | None = None
        self._closed = False

    async def read_into(self, output: CappedOutput) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(loop=loop)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
            os.fdopen(self.fd, "rb", buffering=0, closefd=True),
        )
        self._transport = transport
        if self._closed:  # closed while connecting
            transport.close()
            return
        while chunk := await reader.read(65536):
            output.feed(chunk)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._transport is not None:
            self._transport.close()
        else:
            # Never handed to the loop: close the descriptor ourselves.
            with contextlib.suppress(OSError):
                os.close(self.fd)


async def _ends_within(
    step: asyncio.Future[Any], cancelled: asyncio.Future[None], timeout: float | None
) -> bool:
    """Whether ``step`` ends within ``timeout`` seconds; raises ``CancelledError`` if
    ``cancelled`` (the call's cancellation token fired) comes first."""
    done, _ = await asyncio.wait(
        {step, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
    )
    if cancelled in done:
        raise asyncio.CancelledError()
    return step in done


async def _stop(execution: Execution, pipe: _Pipe, reading: asyncio.Future[None]) -> bool:
    """Kill the script and everything it started; then give the reader the output
    written before the kill, but never wait for long.

    Returns:
        Whether nothing of the execution is left (see `Execution.kill`).
    """
    stopped = await execution.kill(pipe.inode)
    if not reading.done():
        done, _ = await asyncio.wait({reading}, timeout=_DRAIN_SECONDS)
        if not done:
            reading.cancel()
    if reading.done() and not reading.cancelled():
        reading.exception()  # mark a reader error as retrieved; the kill explains it
    # A process that ignores SIGKILL (uninterruptible sleep) is not waited for forever.
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(execution.process.wait(), _DRAIN_SECONDS)
    return stopped


def _remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


register_builtin(LocalCommandLineCodeExecutor, autogen="autogen_ext.code_executors.local")
