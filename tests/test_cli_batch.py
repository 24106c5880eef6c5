"""``flowlib batch``: tasks file, progress bar, summary, results file, re-runs."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from flowlib.cli import CliError, ExitCode, main
from flowlib.cli._batch import BatchProgress, load_tasks

FLOWS = Path(__file__).parent / "_batch_flows.py"


def write_tasks(path: Path, tasks: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(t) for t in tasks) + "\n", encoding="utf-8")
    return path


def test_tasks_file_lines_and_stable_run_ids(tmp_path: Path) -> None:
    path = write_tasks(tmp_path / "evals.jsonl", ["a", {"task": "b", "run_id": "mine"}, "a"])
    tasks, run_ids = load_tasks(path)
    assert tasks == ["a", "b", "a"]
    assert run_ids[1] == "mine"
    assert run_ids[0].startswith("evals-1-") and run_ids[2].startswith("evals-3-")
    assert load_tasks(path) == (tasks, run_ids)  # the same ids every time: re-runs resume


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", "evals.jsonl:1: not JSON"),
        ('"ok"\n42\n', "evals.jsonl:2: a line is a JSON string"),
        ('{"task": "a", "run_id": "x"}\n{"task": "b", "run_id": "x"}\n', "run ids repeat: x"),
    ],
)
def test_bad_tasks_files_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "evals.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CliError, match=message) as raised:
        load_tasks(path)
    # A bad file fails the command (1), as a missing one does; 2 is a bad command line.
    assert raised.value.code == ExitCode.ERROR


def test_progress_line_and_summary() -> None:
    progress = BatchProgress(total=10, done=3, failed=1, skipped=2, turns=20, tokens=300)
    progress.started = 100.0
    line = progress.line(now=102.0)
    assert line == (
        "4/10 runs (3 done, 1 failed | 20 turns | 300 tokens) | 2.0 s | 2.0 runs/s | 3 s left"
    )
    assert BatchProgress(total=2, turns=1, tokens=1).counts() == (
        "0 done, 0 failed | 1 turn | 1 token"
    )
    assert BatchProgress(total=2).eta(now=time.perf_counter() + 1) is None
    summary = progress.summary(now=102.0).splitlines()
    assert summary[0] == "runs     10"
    assert "done     3 (2 already finished in the store)" in summary
    assert "rate     2.0 runs/s" in summary


def test_a_missing_tasks_file_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "batch",
            f"{FLOWS}:build",
            str(tmp_path / "none.jsonl"),
            "--store",
            "memory://",
            "--out",
            str(tmp_path / "out.jsonl"),
        ]
    )
    assert code == 1
    assert "none.jsonl: no such file" in capsys.readouterr().err


def test_batch_then_rerun_skips_finished_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "evals.jsonl", [f"t{i}" for i in range(20)] + ["fail-me"])
    out = tmp_path / "results.jsonl"
    argv = [
        "batch",
        f"{FLOWS}:build",
        str(tasks),
        "--store",
        f"sqlite:///{tmp_path}/runs.db",
        "--concurrency",
        "8",
        "--out",
        str(out),
    ]
    stdout = io.StringIO()
    assert main(argv, out=stdout) == 1  # one run failed
    report = stdout.getvalue()
    assert "done     20 (0 already finished in the store)" in report
    assert "failed   1" in report
    assert "failed: evals-21-" in report and "middle cannot handle" in report
    progress = capsys.readouterr().err
    assert "21/21 runs (20 done, 1 failed" in progress
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["index"] for r in rows) == list(range(21))
    ok = next(r for r in rows if r["task"] == "t0")
    assert (ok["status"], ok["turns"], ok["tokens"]) == ("done", 5, 75)
    assert [m["source"] for m in ok["messages"]][-1] == "join"

    stdout = io.StringIO()
    assert main(argv, out=stdout) == 1  # the failing run resumes, and fails again
    assert "done     20 (20 already finished in the store)" in stdout.getvalue()
    rows_again = [json.loads(line) for line in out.read_text().splitlines()]
    again = next(r for r in rows_again if r["task"] == "t0")
    assert again["messages"] == ok["messages"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_tqdm_bar_and_a_log_plain_lines() -> None:
    from flowlib.cli._batch import _Bar

    terminal, log = _Terminal(), io.StringIO()
    for stream in (terminal, log):
        bar = _Bar(BatchProgress(total=2), stream)
        bar.draw(force=True)
        bar.progress.done = 2
        bar.draw()  # a log line: too soon after the last one, skipped
        bar.close()  # always drawn
    drawn = terminal.getvalue()
    # tqdm redraws in place (carriage returns), with its rate and time left, and our counts.
    assert "\r" in drawn and "2/2" in drawn and "run/s" in drawn
    assert "2 done, 0 failed" in drawn.split("\r")[-1]
    lines = log.getvalue().splitlines()
    assert [line.split(" runs")[0] for line in lines] == ["0/2", "2/2"]
    assert "\r" not in log.getvalue() and "\x1b" not in log.getvalue()
    assert lines[-1].endswith("s left")


NO_STORE_FACTORY = """
from flowlib.agents import FunctionAgent
from flowlib.teams import RoundRobinGroupChat


async def echo(messages):
    return "ok"


def build():  # takes no checkpoint_store: its teams cannot checkpoint
    return RoundRobinGroupChat([FunctionAgent("echo", echo)], max_turns=1)
"""


def test_a_batch_stops_when_every_run_fails_the_same_way_before_a_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A factory that cannot take the store fails every run the same way: the batch says
    so once and stops, instead of reporting the same error for each task."""
    flow = tmp_path / "flow.py"
    flow.write_text(NO_STORE_FACTORY, encoding="utf-8")
    tasks = write_tasks(tmp_path / "evals.jsonl", [f"t{i}" for i in range(30)])
    stdout = io.StringIO()
    argv = ["batch", f"{flow}:build", str(tasks), "--store", "memory://"]
    code = main([*argv, "--concurrency", "2", "--out", str(tmp_path / "o.jsonl")], out=stdout)
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("stopped after") == 1
    assert "takes no `checkpoint_store` argument" in err
    assert "failed: " not in stdout.getvalue()  # no per-task repetition of the same error
