"""``flowlib batch``: run a team on every task of a JSONL file, durably, with a progress bar.

```
flowlib batch FILE.py:build tasks.jsonl --store URL [--ray auto|local|ADDRESS]
              [--concurrency N] [--workers N] [--num-cpus N] [--num-gpus N]
              [--resources JSON] [--runtime-env JSON] [--spread | --pack]
              [--dashboard | --no-dashboard] [--ready-timeout S] --out results.jsonl
```

Each line of the tasks file is a JSON string (the task) or an object with ``"task"`` and
optionally ``"run_id"``. A line without a run id gets a stable one from the file name,
the line number and the task, so running the same command again finds the same runs in
the store: finished ones are skipped (their stored results are written again), the
others resume from their last checkpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .._english import clause, counted
from ._common import EXIT_ERROR, EXIT_INVALID, EXIT_OK, CliError

__all__ = ["BatchProgress", "load_tasks", "register"]


def register(commands: Any) -> None:
    """Add the ``batch`` subcommand to the CLI's subparsers."""
    batch = commands.add_parser(
        "batch",
        help="run a team on every task of a JSONL file (durable, resumable, optionally on Ray)",
        description="Run FACTORY on every task of TASKS, checkpointing each run to --store. "
        "Running the same command again skips finished runs and resumes the others.",
    )
    batch.add_argument("factory", help="FILE.py:FUNCTION (or module:function) building a team")
    batch.add_argument("tasks", help="a JSONL file: one task (string or {'task', 'run_id'})")
    default_store = os.environ.get("FLOWLIB_STORE") or None
    batch.add_argument(
        "--store",
        default=default_store,
        required=default_store is None,
        help="checkpoint store: sqlite:///runs.db or postgresql://... (default: $FLOWLIB_STORE)",
    )
    batch.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run on Ray: 'auto' (the running cluster), 'local' (start one), or an address",
    )
    batch.add_argument(
        "--concurrency", type=int, default=100, help="runs at once (per Ray worker with --ray)"
    )
    batch.add_argument("--workers", type=int, default=None, help="Ray workers (default: CPUs)")
    ray_options = batch.add_argument_group("Ray options (with --ray)")
    ray_options.add_argument(
        "--num-cpus", type=float, default=1.0, help="CPUs each Ray worker reserves (default: 1)"
    )
    ray_options.add_argument(
        "--num-gpus", type=float, default=0.0, help="GPUs each Ray worker reserves (default: 0)"
    )
    ray_options.add_argument(
        "--resources",
        metavar="JSON",
        default=None,
        help="custom resources each Ray worker reserves, e.g. '{\"big_node\": 1}'",
    )
    ray_options.add_argument(
        "--runtime-env",
        metavar="JSON",
        default=None,
        help='Ray runtime environment of the workers, e.g. \'{"working_dir": ".", "pip": '
        '["mypkg"]}\'',
    )
    placement = ray_options.add_mutually_exclusive_group()
    placement.add_argument(
        "--spread",
        dest="placement",
        action="store_const",
        const="SPREAD",
        default="SPREAD",
        help="spread the workers over the nodes (the default)",
    )
    placement.add_argument(
        "--pack",
        dest="placement",
        action="store_const",
        const="DEFAULT",
        help="let Ray pack the workers onto as few nodes as fit",
    )
    ray_options.add_argument(
        "--dashboard",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --ray local: start Ray's dashboard or not (default: as Ray decides)",
    )
    ray_options.add_argument(
        "--ready-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds to wait for the workers to be placed and ready (default: 120)",
    )
    batch.add_argument("--out", required=True, help="results file (JSONL, one line per run)")
    batch.set_defaults(handler=run_batch_command)


def _stable_id(stem: str, line: int, task: str) -> str:
    digest = hashlib.sha1(task.encode("utf-8")).hexdigest()[:8]
    return f"{stem}-{line}-{digest}"


def load_tasks(path: Path) -> tuple[list[str], list[str]]:
    """Read a tasks file; return the tasks and their run ids.

    Raises:
        CliError: If the file is missing, a line is not JSON, not a string or an object
            with a string ``task``, or two lines share a run id.
    """
    if not path.is_file():
        raise CliError(f"{path}: no such file")
    tasks: list[str] = []
    run_ids: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            # A bad file is a failed command (1, like a missing file), not a bad command line.
            raise CliError(f"{path}:{number}: not JSON ({exc.msg})", EXIT_ERROR) from exc
        run_id: Any = None
        if isinstance(value, dict):
            run_id = value.get("run_id")
            value = value.get("task")
        if not isinstance(value, str) or not (run_id is None or isinstance(run_id, str)):
            raise CliError(
                f'{path}:{number}: a line is a JSON string or {{"task": "...", "run_id": '
                '"..."}} with string values',
                EXIT_ERROR,
            )
        tasks.append(value)
        run_ids.append(run_id or _stable_id(path.stem, number, value))
    repeated = sorted(r for r, n in collections.Counter(run_ids).items() if n > 1)
    if repeated:
        raise CliError(f"{path}: run ids repeat: {', '.join(repeated[:5])}", EXIT_ERROR)
    return tasks, run_ids


def _json_option(text: str | None, option: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{option}: not JSON ({exc.msg})", EXIT_INVALID) from exc
    if not isinstance(value, dict):
        raise CliError(f"{option}: a JSON object, e.g. '{{\"name\": 1}}'", EXIT_INVALID)
    return value


def _usage_tokens(message: Any) -> int:
    usage = getattr(message, "models_usage", None)
    if usage is None:
        return 0
    return int(usage.prompt_tokens) + int(usage.completion_tokens)


@dataclass
class BatchProgress:
    """Counts of a batch in flight, drawn as one plain-text line.

    Attributes:
        total: Runs in the batch.
        done: Runs that finished (ran now or already finished in the store).
        failed: Runs that failed.
        skipped: Finished runs found in the store (nothing ran).
        turns: Agent turns (chat messages after the task) so far.
        tokens: Model tokens (prompt + completion) so far.
        started: ``time.perf_counter()`` at the start.
    """

    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0
    turns: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.perf_counter)

    def rate(self, *, now: float | None = None) -> float:
        """Finished runs per second so far."""
        elapsed = (now if now is not None else time.perf_counter()) - self.started
        return (self.done + self.failed) / elapsed if elapsed > 0 else 0.0

    def eta(self, *, now: float | None = None) -> float | None:
        """Seconds left at the rate so far (None before the first run finishes)."""
        rate = self.rate(now=now)
        left = self.total - self.done - self.failed
        return left / rate if rate > 0 else None

    def counts(self) -> str:
        """Runs done and failed, turns and tokens: the bar's words."""
        return (
            f"{self.done} done, {self.failed} failed | {counted(self.turns, 'turn')} | "
            f"{counted(self.tokens, 'token')}"
        )

    def line(self, *, now: float | None = None) -> str:
        """The progress as one plain line (logs, pipes): runs, counts, time, rate, ETA."""
        moment = now if now is not None else time.perf_counter()
        elapsed = moment - self.started
        eta = self.eta(now=moment)
        left = f"{eta:.0f} s left" if eta is not None else "time left unknown"
        return (
            f"{self.done + self.failed}/{self.total} runs ({self.counts()}) | "
            f"{elapsed:.1f} s | {self.rate(now=moment):.1f} runs/s | {left}"
        )

    def summary(self, *, now: float | None = None, cpu: float | None = None) -> str:
        """The table printed at the end (``cpu``: this process's CPU seconds over the
        same time, if known)."""
        elapsed = (now if now is not None else time.perf_counter()) - self.started
        finished = self.done + self.failed
        rows = [
            ("runs", str(self.total)),
            ("done", f"{self.done} ({self.skipped} already finished in the store)"),
            ("failed", str(self.failed)),
            ("turns", str(self.turns)),
            ("tokens", str(self.tokens)),
            ("elapsed", f"{elapsed:.2f} s"),
            ("rate", f"{finished / elapsed if elapsed > 0 else 0.0:.1f} runs/s"),
        ]
        if cpu is not None:
            rows.append(("cpu", f"{cpu:.2f} s (this process)"))
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


class _Bar:
    """The batch's progress: a tqdm bar on a terminal (rate and time left, redrawn in
    place), plain lines now and then otherwise (logs and pipes get no control codes)."""

    def __init__(self, progress: BatchProgress, stream: TextIO) -> None:
        self.progress = progress
        self.stream = stream
        self.tty = stream.isatty()
        self._last = 0.0
        self._shown = 0
        self._tqdm: Any = None
        if self.tty:
            from tqdm import tqdm

            self._tqdm = tqdm(
                total=progress.total, file=stream, unit="run", dynamic_ncols=True, leave=True
            )

    def draw(self, *, force: bool = False) -> None:
        now = time.perf_counter()
        if self._tqdm is not None:
            finished = self.progress.done + self.progress.failed
            self._tqdm.set_postfix_str(self.progress.counts(), refresh=False)
            self._tqdm.update(finished - self._shown)  # tqdm redraws at its own pace
            self._shown = finished
            if force:
                self._tqdm.refresh()
            return
        if not force and now - self._last < 2.0:
            return
        self._last = now
        self.stream.write(self.progress.line(now=now) + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.draw(force=True)
        if self._tqdm is not None:
            self._tqdm.close()


def _record(index: int, run_id: str, task: str, item: Any, task_count: int) -> dict[str, Any]:
    from ..base import TaskResult

    if isinstance(item, TaskResult):
        messages, error = item.messages, None
        status, stop_reason = "done", item.stop_reason
    else:
        messages, error = item.partial_result.messages, f"{item.error_type}: {item.error_message}"
        status, stop_reason = "failed", None
    chats = [m for m in messages if hasattr(m, "to_model_text")]
    return {
        "index": index,
        "run_id": run_id,
        "task": task,
        "status": status,
        "stop_reason": stop_reason,
        "error": error,
        "turns": max(0, len(chats) - task_count),
        "tokens": sum(_usage_tokens(m) for m in messages),
        "messages": [m.dump() if hasattr(m, "dump") else str(m) for m in messages],
    }


async def _run_batch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..base import TaskResult
    from ..batch import LocalRunner
    from ..errors import RunFailedError
    from ..messages import BaseChatMessage

    tasks, run_ids = load_tasks(Path(args.tasks))
    if args.concurrency < 1:
        raise CliError("--concurrency must be at least 1", EXIT_INVALID)
    runner: Any
    if args.ray is not None:
        try:
            from ..distributed import RayRunner
        except ImportError as exc:
            raise CliError(str(exc)) from exc
        address = None if args.ray == "local" else args.ray
        runner = RayRunner(
            args.factory,
            checkpoint_store=args.store,
            address=address,
            max_concurrency=args.concurrency,
            workers=args.workers,
            num_cpus=args.num_cpus,
            num_gpus=args.num_gpus,
            resources=_json_option(args.resources, "--resources"),
            runtime_env=_json_option(args.runtime_env, "--runtime-env"),
            scheduling_strategy=args.placement,
            include_dashboard=args.dashboard,
            ready_timeout=args.ready_timeout,
        )
        print("starting the Ray workers ...", file=err, flush=True)
        try:
            await runner.start()
        except BaseException:
            await runner.close()
            raise
    else:
        runner = LocalRunner(
            args.factory, checkpoint_store=args.store, max_concurrency=args.concurrency
        )
    progress = BatchProgress(total=len(tasks))
    cpu_at_start = time.process_time()
    bar = _Bar(progress, err)
    live: dict[int, tuple[int, int]] = {}  # run index -> (turns, tokens) seen so far
    failures: list[RunFailedError] = []
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    same_cause: list[tuple[str, str]] = []  # failures before any turn: (type, message)
    stopped: tuple[str, str] | None = None
    # On Ray only results cross to the driver (turns and tokens are counted as each run
    # ends): the workers do not pickle every message and event, so the command runs at
    # `run_many`'s speed.
    events = runner.stream_many(tasks, run_ids=run_ids, events=args.ray is None)
    ended: float | None = None  # when the last result came (stopping Ray is not counted)
    cpu: float | None = None
    try:
        with out_path.open("w", encoding="utf-8") as results:
            async for event in events:
                item, index = event.item, event.index
                turns, tokens = live.get(index, (0, 0))
                if isinstance(item, (TaskResult, RunFailedError)):
                    line = _record(index, event.run_id, tasks[index], item, 1)
                    progress.turns += line["turns"] - turns
                    progress.tokens += line["tokens"] - tokens
                    if isinstance(item, RunFailedError):
                        progress.failed += 1
                        failures.append(item)
                        if line["turns"] == 0:
                            same_cause.append((item.error_type, item.error_message))
                    else:
                        progress.done += 1
                        progress.skipped += event.skipped
                    live.pop(index, None)
                    results.write(json.dumps(line) + "\n")
                    results.flush()
                    bar.draw(force=progress.done + progress.failed == progress.total)
                    if _not_the_tasks_fault(progress, same_cause):
                        stopped = same_cause[0]
                        break
                    continue
                if isinstance(item, BaseChatMessage) and item.source != "user":
                    turns += 1
                    progress.turns += 1
                delta = _usage_tokens(item)
                progress.tokens += delta
                live[index] = (turns, tokens + delta)
                bar.draw()
        ended, cpu = time.perf_counter(), time.process_time() - cpu_at_start
    finally:
        await events.aclose()  # stopped early (or failed): the runs still going are cancelled
        if hasattr(runner, "close"):  # a RayRunner stops its workers
            await runner.close()
    bar.close()
    if stopped is not None:
        kind, message = stopped
        raise CliError(
            f"stopped after {counted(len(same_cause), 'run')} failed the same way before "
            f"their first turn, which is no task's fault: {kind}: {clause(message)}. Fix "
            "it and run the command again (runs that finished are not run again)."
        )
    print(progress.summary(now=ended, cpu=cpu), file=out)
    for failure in failures[:10]:
        print(f"failed: {failure.run_id}: {failure.error_type}: {failure.error_message}", file=out)
    if len(failures) > 10:
        print(f"... and {len(failures) - 10} more failures (see {args.out})", file=out)
    print(f"wrote {len(tasks)} results to {args.out}", file=out)
    return EXIT_ERROR if failures else EXIT_OK


STOP_AFTER_SAME_FAILURES = 3
"""A batch stops when its first runs all fail the same way before their first turn (a
factory or a store that cannot work, not a task): this many of them, and none done."""


def _not_the_tasks_fault(progress: BatchProgress, same_cause: list[tuple[str, str]]) -> bool:
    return (
        progress.done == 0
        and len(same_cause) >= STOP_AFTER_SAME_FAILURES
        and len(same_cause) == progress.failed
        and len(set(same_cause)) == 1
    )


def run_batch_command(args: argparse.Namespace, out: TextIO) -> int:
    """The ``batch`` handler (called by ``flowlib.cli.main``)."""
    return asyncio.run(_run_batch(args, out, sys.stderr))
