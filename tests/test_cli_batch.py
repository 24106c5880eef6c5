"""``flowlib batch``: tasks file, progress bar, summary, results file, re-runs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from flowlib._cli_batch import BatchProgress, load_tasks
from flowlib.cli import CliError, ExitCode, main

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
    line = progress.line(width=10, now=102.0)
    assert line == (
        "[####......] 4/10 runs (3 done, 1 failed) | 20 turns | 300 tokens | 2.0 s | 2.0 runs/s"
    )
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
    assert "21/21 runs (20 done, 1 failed)" in progress
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


def test_the_bar_redraws_in_place_on_a_terminal_and_prints_lines_otherwise() -> None:
    from flowlib._cli_batch import _Bar

    terminal, log = _Terminal(), io.StringIO()
    for stream in (terminal, log):
        bar = _Bar(BatchProgress(total=2), stream)
        bar.draw(force=True)
        bar.progress.done = 2
        bar.draw()  # too soon after the last one: skipped
        bar.close()  # always drawn
    assert terminal.getvalue().count("\r") == 2 and terminal.getvalue().endswith("\n")
    assert "2/2 runs (2 done, 0 failed)" in terminal.getvalue().split("\r")[-1]
    assert [line.split("]")[1].split(" runs")[0] for line in log.getvalue().splitlines()] == [
        " 0/2",
        " 2/2",
    ]
