"""Code executors: markdown extraction and the local command-line executor (real
subprocesses: python and bash), including timeouts and cancellation."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from flowlib.base import CancellationToken
from flowlib.code_executors import (
    CodeBlock,
    CodeExecutor,
    CodeResult,
    CommandLineCodeResult,
    LocalCommandLineCodeExecutor,
    extract_markdown_code_blocks,
)
from flowlib.messages import CodeExecutionEvent, MessageFactory


def py(code: str) -> CodeBlock:
    return CodeBlock(code=code, language="python")


def sh(code: str) -> CodeBlock:
    return CodeBlock(code=code, language="sh")


async def run_blocks(
    executor: LocalCommandLineCodeExecutor, *blocks: CodeBlock
) -> CommandLineCodeResult:
    return await executor.execute_code_blocks(list(blocks), CancellationToken())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child that is not reaped yet is a zombie: count it as dead.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


# --- extract_markdown_code_blocks ---------------------------------------------------------


def test_extracts_blocks_in_order_with_languages() -> None:
    text = (
        "Here is some code\n```python\nprint('Hello world')\n```\nand a script:\n"
        "```sh\necho hi\nls\n```\n"
    )
    assert extract_markdown_code_blocks(text) == [
        CodeBlock(code="print('Hello world')", language="python"),
        CodeBlock(code="echo hi\nls", language="sh"),
    ]


def test_block_without_language_and_info_string() -> None:
    text = "```\nplain\n```\n```python title=demo.py\nx = 1\n```"
    assert extract_markdown_code_blocks(text) == [
        CodeBlock(code="plain", language=""),
        CodeBlock(code="x = 1", language="python"),
    ]


def test_unclosed_block_is_not_extracted() -> None:
    assert extract_markdown_code_blocks("```python\nprint('half')\n") == []
    assert extract_markdown_code_blocks("no code here") == []


def test_indented_fences_and_longer_fences() -> None:
    text = "1. step\n   ```sh\n   echo a\n   ```\n````markdown\n```python\nx\n```\n````\n"
    blocks = extract_markdown_code_blocks(text)
    assert blocks == [
        CodeBlock(code="   echo a", language="sh"),
        CodeBlock(code="```python\nx\n```", language="markdown"),
    ]


def test_empty_block_and_crlf() -> None:
    assert extract_markdown_code_blocks("```python\r\n```\r\n") == [
        CodeBlock(code="", language="python")
    ]


# --- LocalCommandLineCodeExecutor ---------------------------------------------------------


async def test_runs_python_with_current_interpreter(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    result = await run_blocks(executor, py("import sys\nprint(sys.executable)"))
    assert isinstance(result, CommandLineCodeResult)
    assert result.exit_code == 0
    assert result.output == sys.executable + "\n"


async def test_output_interleaves_stdout_and_stderr(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    code = "import sys\nprint('out 1')\nprint('err', file=sys.stderr)\nprint('out 2')"
    result = await run_blocks(executor, py(code))
    assert result.output == "out 1\nerr\nout 2\n"


async def test_runs_in_work_dir_and_reports_code_file(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, cleanup_temp_files=False)
    result = await run_blocks(executor, py("import os\nprint(os.getcwd())"))
    assert Path(result.output.strip()) == tmp_path
    assert result.code_file is not None
    code_file = Path(result.code_file)
    assert code_file.parent == tmp_path and code_file.suffix == ".py"
    assert code_file.read_text() == "import os\nprint(os.getcwd())\n"


async def test_code_files_are_removed_by_default(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    result = await run_blocks(executor, py("open('kept.txt', 'w').write('x')"))
    assert result.code_file is not None and not Path(result.code_file).exists()
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]


async def test_work_dir_is_created(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    executor = LocalCommandLineCodeExecutor(work_dir=str(target))
    await executor.start()
    assert target.is_dir() and executor.work_dir == target


@pytest.mark.parametrize("language", ["sh", "bash", "shell", "SH"])
async def test_runs_shell_blocks_with_bash(tmp_path: Path, language: str) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    # `[[ ]]` and arrays are bash, not POSIX sh.
    code = 'words=(alpha beta)\nif [[ ${#words[@]} == 2 ]]; then echo "${words[1]}"; fi'
    result = await executor.execute_code_blocks(
        [CodeBlock(code=code, language=language)], CancellationToken()
    )
    assert (result.exit_code, result.output) == (0, "beta\n")


async def test_blocks_run_in_order_and_outputs_concatenate(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    result = await run_blocks(
        executor, py("open('n.txt', 'w').write('7')"), sh("cat n.txt; echo"), py("print('done')")
    )
    assert (result.exit_code, result.output) == (0, "7\ndone\n")


async def test_first_failing_block_stops_the_rest(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    result = await run_blocks(
        executor, py("print('one')"), py("raise SystemExit(3)"), py("print('never')")
    )
    assert result.exit_code == 3
    assert result.output == "one\n"


async def test_python_error_output_has_traceback(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    result = await run_blocks(executor, py("1 / 0"))
    assert result.exit_code == 1
    assert "ZeroDivisionError" in result.output and "Traceback" in result.output


async def test_unsupported_language_is_a_clear_error(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    result = await run_blocks(
        executor, py("print('ran')"), CodeBlock(code="x <- 1", language="r"), py("print('no')")
    )
    assert result.exit_code == 1
    assert result.output.startswith("ran\nUnsupported language `r`")
    assert "python" in result.output and "sh" in result.output
    assert "no\n" not in result.output


async def test_no_blocks_is_success(tmp_path: Path) -> None:
    result = await run_blocks(LocalCommandLineCodeExecutor(work_dir=tmp_path))
    assert (result.exit_code, result.output, result.code_file) == (0, "", None)


async def test_large_output_is_read_completely(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    result = await run_blocks(executor, py("print('x' * 1_000_000)"))
    assert result.exit_code == 0 and len(result.output) == 1_000_001


async def test_timeout_kills_the_code_and_keeps_partial_output(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=0.5)
    started = time.monotonic()
    result = await run_blocks(
        executor, py("import time\nprint('before', flush=True)\ntime.sleep(30)")
    )
    assert time.monotonic() - started < 10
    assert result.exit_code == 124
    assert result.output.startswith("before\n")
    assert result.output.endswith("Timeout: the code ran past the 0.5 s limit and was stopped.\n")


async def test_timeout_also_kills_processes_the_script_started(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=0.5)
    # The background sleep keeps the output pipe open: unless it is killed too, the
    # executor would wait for it.
    started = time.monotonic()
    result = await run_blocks(executor, sh("sleep 30 &\necho $! > child.pid\nwait"))
    assert time.monotonic() - started < 10
    assert result.exit_code == 124
    child = int((tmp_path / "child.pid").read_text())
    for _ in range(100):
        if not alive(child):
            break
        await asyncio.sleep(0.05)
    assert not alive(child)


async def test_cancellation_kills_the_process(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    token = CancellationToken()
    code = "import os, time\nopen('pid', 'w').write(str(os.getpid()))\ntime.sleep(30)"
    run = asyncio.ensure_future(executor.execute_code_blocks([py(code)], token))
    pid_file = tmp_path / "pid"
    while not (pid_file.exists() and pid_file.read_text()):
        await asyncio.sleep(0.02)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, 10)
    assert not alive(int(pid_file.read_text()))


async def test_cancelled_token_runs_nothing(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await executor.execute_code_blocks([py("open('ran', 'w')")], token)
    assert not (tmp_path / "ran").exists()


async def test_task_cancellation_kills_the_process(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    code = "import os, time\nopen('pid', 'w').write(str(os.getpid()))\ntime.sleep(30)"
    run = asyncio.ensure_future(run_blocks(executor, py(code)))
    pid_file = tmp_path / "pid"
    while not (pid_file.exists() and pid_file.read_text()):
        await asyncio.sleep(0.02)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert not alive(int(pid_file.read_text()))


async def test_temporary_work_dir_lifecycle() -> None:
    async with LocalCommandLineCodeExecutor() as executor:
        first = executor.work_dir
        assert first.is_dir()
        result = await run_blocks(executor, py("open('f', 'w').write('1')\nprint('ok')"))
        assert result.output == "ok\n" and (first / "f").exists()
        await executor.restart()
        assert executor.work_dir != first and not first.exists()
        second = executor.work_dir
    assert not second.exists()


async def test_given_work_dir_survives_stop(tmp_path: Path) -> None:
    async with LocalCommandLineCodeExecutor(work_dir=tmp_path) as executor:
        await run_blocks(executor, py("open('f', 'w').write('1')"))
    assert (tmp_path / "f").exists()


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout"):
        LocalCommandLineCodeExecutor(timeout=0)


def test_local_executor_is_a_code_executor() -> None:
    assert isinstance(LocalCommandLineCodeExecutor(), CodeExecutor)
    assert LocalCommandLineCodeExecutor().timeout == 60


def test_command_line_result_is_a_code_result_and_round_trips_in_events() -> None:
    result = CommandLineCodeResult(exit_code=0, output="hi\n", code_file="/tmp/x.py")
    assert isinstance(result, CodeResult)
    event = CodeExecutionEvent(retry_attempt=0, result=result, source="executor")
    loaded = MessageFactory().create(event.dump())
    assert isinstance(loaded, CodeExecutionEvent)
    assert loaded.result.output == "hi\n" and loaded.to_text() == "hi\n"


# --- faults and hostile code (issue 11.3) ---------------------------------------------------


async def test_identical_blocks_run_at_once_each_get_their_own_file(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, cleanup_temp_files=False)
    block = sh("sleep 0.2\necho same")
    results = await asyncio.gather(*(run_blocks(executor, block) for _ in range(8)))
    assert [(r.exit_code, r.output) for r in results] == [(0, "same\n")] * 8
    files = {r.code_file for r in results}
    assert len(files) == 8 and all(
        Path(str(f)).read_text() == "sleep 0.2\necho same\n" for f in files
    )


async def test_identical_blocks_with_cleanup_do_not_clash(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    block = py("import time\ntime.sleep(0.1)\nprint('ok')")
    results = await asyncio.gather(*(run_blocks(executor, block) for _ in range(8)))
    assert [(r.exit_code, r.output) for r in results] == [(0, "ok\n")] * 8
    assert list(tmp_path.iterdir()) == []


async def test_output_past_the_cap_is_cut_with_a_note(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, max_output_bytes=1000)
    code = "print('first line')\nprint('x' * 100_000)\nprint('last line')"
    result = await run_blocks(executor, py(code))
    assert result.exit_code == 0
    assert result.output.startswith("first line\n")
    assert result.output.endswith("x" * 400 + "\nlast line\n")
    dropped = len("first line\n") + 100_001 + len("last line\n") - 1000
    assert f"\n[... {dropped} bytes of output left out: the limit is 1000 bytes" in result.output
    assert len(result.output.encode()) < 1000 + 200


async def test_memory_does_not_grow_with_the_output(tmp_path: Path) -> None:
    # 40 MB printed, 64 KiB kept: the bytes Python allocated while reading stay near the
    # cap (tracemalloc counts every bytes/bytearray the reader made), far below the output.
    import tracemalloc

    cap = 65536
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, max_output_bytes=cap)
    code = "import sys\nchunk = 'y' * 65536\nfor _ in range(640):\n    sys.stdout.write(chunk)\n"
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = await run_blocks(executor, py(code))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0
    assert f"{640 * 65536 - cap} bytes of output left out" in result.output
    assert peak < 2_000_000, peak


def test_max_output_bytes_must_be_a_positive_int() -> None:
    from flowlib.errors import ArgumentTypeError, FlowlibError, InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="`max_output_bytes` must be positive"):
        LocalCommandLineCodeExecutor(max_output_bytes=0)
    with pytest.raises(ArgumentTypeError, match="`max_output_bytes` must be an int"):
        LocalCommandLineCodeExecutor(max_output_bytes="10")  # type: ignore[arg-type]
    with pytest.raises(FlowlibError, match="`timeout` must be a number"):
        LocalCommandLineCodeExecutor(timeout="5")  # type: ignore[arg-type]
    assert LocalCommandLineCodeExecutor().max_output_bytes == 1_048_576


async def wait_dead(pid: int) -> bool:
    for _ in range(100):
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_timeout_holds_when_a_setsid_grandchild_keeps_the_pipe_open(tmp_path: Path) -> None:
    # `setsid` moves the grandchild out of the script's process group (so a group kill
    # misses it) while it still holds the output pipe (so reading never ends by itself).
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=0.5)
    code = "setsid sleep 90 &\necho $! > grandchild.pid\necho started\nsleep 90\n"
    result = await run_blocks(executor, sh(code))
    assert result.exit_code == 124
    assert result.output.startswith("started\n")
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    assert await wait_dead(grandchild)


async def test_script_that_exits_but_leaves_a_setsid_grandchild_returns(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path, timeout=60)
    code = "setsid sleep 90 &\necho $! > grandchild.pid\necho done\n"
    result = await run_blocks(executor, sh(code))
    assert result.exit_code == 0
    assert result.output == (
        "done\nNote: processes the code left running in the background were stopped.\n"
    )
    assert await wait_dead(int((tmp_path / "grandchild.pid").read_text()))


async def test_cancellation_also_kills_a_setsid_grandchild(tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    token = CancellationToken()
    code = "setsid sleep 90 &\necho $! > grandchild.pid\nsleep 90\n"
    run = asyncio.ensure_future(executor.execute_code_blocks([sh(code)], token))
    pid_file = tmp_path / "grandchild.pid"
    while not (pid_file.exists() and pid_file.read_text()):
        await asyncio.sleep(0.02)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, 30)
    assert await wait_dead(int(pid_file.read_text()))


async def test_background_process_without_the_pipe_is_not_waited_for(tmp_path: Path) -> None:
    # A daemon that let go of the output is not ours to wait for (nor to kill): the
    # executor is not a sandbox (docs/security.md).
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path)
    code = "setsid sleep 5 > /dev/null 2>&1 &\necho $! > daemon.pid\necho done\n"
    result = await run_blocks(executor, sh(code))
    assert (result.exit_code, result.output) == (0, "done\n")
    daemon = int((tmp_path / "daemon.pid").read_text())
    assert alive(daemon)
    os.kill(daemon, 9)


def test_closing_fence_on_the_last_code_line_closes_the_block() -> None:
    # AutoGen extracts these (issue 16.2); models write them often.
    assert extract_markdown_code_blocks("```python\nprint(1)```") == [py("print(1)")]
    text = "Try:\n```sh\necho a\necho b```\nthen\n```python\nx = 2\n```\n"
    assert extract_markdown_code_blocks(text) == [sh("echo a\necho b"), py("x = 2")]
    # Backticks inside a line are code, and a shorter run does not close the block.
    assert extract_markdown_code_blocks("````python\nprint('```')\nx```\n````") == [
        py("print('```')\nx```")
    ]
