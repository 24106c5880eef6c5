"""Crash-test a user's own flow: [`check_crashes`][flowlib.testing.check_crashes] and
[`assert_survives_crashes`][flowlib.testing.assert_survives_crashes].

The flow is built by the user's factory (``build(*, checkpoint_store=None)``), as it is:
its own agents, models and tools. It runs once uninterrupted (twice, to tell a flow that
differs between two plain runs from one that differs after a crash), then many times
interrupted at a point hypothesis draws, each time resumed in a fresh process from the
run's temporary SQLite store:

- ``exception``: the ``k``-th turn raises as it starts, or once its reply is ready;
- ``cancel``: the run is cancelled ``j`` event-loop steps after the ``k``-th turn starts;
- ``sigkill``: the process is killed ``j`` event-loop steps after the ``k``-th turn starts,
  once its reply is ready, or right after the ``k``-th checkpoint is committed.

Every run is a process forked from a server that imported the factory's module once
(``_crash_worker.py``), so a resume starts from the module as imported: globals,
closures and caches are fresh, as after a real crash. The resumed run's transcript and
stop reason are compared with the uninterrupted run's; a difference is a finding, shrunk
by hypothesis to the simplest interruption that shows it.

Rules (``CrashFinding.rule``):

- ``state_not_restored``: an agent (or nested team) answered differently after resume;
- ``outside_checkpoint``: a function node answered differently after resume;
- ``routing_differs``: after the same messages, another node spoke;
- ``stop_differs``: same messages, another stop reason;
- ``resume_failed``: resuming raised;
- ``not_deterministic``: two uninterrupted runs already differ.
"""

from __future__ import annotations

import inspect
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from ..errors import ContractError, FlowlibError, InvalidArgumentError
from ..graph import COMPLETE_REASON

__all__ = [
    "CRASH_RULES",
    "CrashFinding",
    "CrashReport",
    "CrashRule",
    "FlowNotCrashSafeError",
    "Interruption",
    "assert_survives_crashes",
    "check_crashes",
]

CrashRule = Literal[
    "state_not_restored",
    "outside_checkpoint",
    "routing_differs",
    "stop_differs",
    "resume_failed",
    "not_deterministic",
]
CRASH_RULES: tuple[CrashRule, ...] = get_args(CrashRule)
"""Every rule a [`CrashFinding`][flowlib.testing.CrashFinding] can name."""

DEFAULT_TASK = "Crash-test the flow."
_RUN_ID = "crash-check"


class FlowNotCrashSafeError(FlowlibError, AssertionError):
    """[`assert_survives_crashes`][flowlib.testing.assert_survives_crashes] found a flow that
    resumes to another outcome; the message holds the report."""


@dataclass(frozen=True)
class Interruption:
    """Where a run was interrupted.

    Attributes:
        kind: ``exception``, ``cancel`` or ``sigkill``.
        turn: The turn (from 0, in the order turns started) or, for ``at="checkpoint"``,
            the checkpoint (from 1) after which the process was killed.
        at: ``start`` (as the turn starts), ``inside`` (``hops`` event-loop steps after it
            started), ``after`` (its reply is ready, not yet recorded) or ``checkpoint``.
        hops: Event-loop steps, for ``inside``.
        node: The node whose turn it was (as the uninterrupted run had it).
    """

    kind: Literal["exception", "cancel", "sigkill"]
    turn: int
    at: Literal["start", "inside", "after", "checkpoint"]
    hops: int = 0
    node: str | None = None

    def __str__(self) -> str:
        what = {"exception": "an exception", "cancel": "a cancellation", "sigkill": "SIGKILL"}
        if self.at == "checkpoint":
            return f"SIGKILL right after checkpoint {self.turn} was committed"
        where = f"turn {self.turn + 1}" + (f" (`{self.node}`)" if self.node else "")
        if self.at == "start":
            return f"{what[self.kind]} as {where} started"
        if self.at == "after":
            return f"{what[self.kind]} in {where}, its reply ready but not yet recorded"
        steps = "step" if self.hops == 1 else "steps"
        return f"{what[self.kind]} {self.hops} event-loop {steps} into {where}"

    def plan(self) -> dict[str, Any]:
        """The worker's form of it."""
        return {"kind": self.kind, "turn": self.turn, "at": self.at, "hops": self.hops}


@dataclass(frozen=True)
class RunOutcome:
    """A finished run, read from its store.

    Attributes:
        messages: ``(node, source, text)`` of each chat message after the task.
        stop_reason: Why it stopped.
        records: The run's checkpoint records (as JSON), to draw its path.
    """

    messages: tuple[tuple[str, str, str], ...]
    stop_reason: str | None
    records: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class CrashFinding:
    """A run that resumed to another outcome than the uninterrupted run.

    Attributes:
        rule: Which rule (see [`CRASH_RULES`][flowlib.testing.CRASH_RULES]).
        nodes: The nodes it is about.
        message: What is wrong and how to fix it.
        interruption: The (shrunk) interruption that shows it (None for
            ``not_deterministic``).
        position: Index of the first differing message in the uninterrupted transcript.
        expected: That message, ``source: text`` (None: the resumed run had an extra one).
        got: The resumed run's message there (None: missing).
        outcome: The resumed (or second uninterrupted) run.
        reference: The uninterrupted run.
    """

    rule: CrashRule
    nodes: tuple[str, ...]
    message: str
    interruption: Interruption | None = None
    position: int | None = None
    expected: str | None = None
    got: str | None = None
    outcome: RunOutcome | None = field(default=None, compare=False, repr=False)
    reference: RunOutcome | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        shown = ", ".join(f"`{n}`" for n in self.nodes)
        lines = [
            f"[{self.rule}] {shown}: {self.message}" if shown else f"[{self.rule}] {self.message}"
        ]
        if self.interruption is not None:
            lines.append(f"  interruption: {self.interruption}; resumed in a fresh process")
        if self.position is not None:
            lines.append(f"  first differing message (#{self.position + 1}):")
            lines.append(f"    uninterrupted: {_short(self.expected)}")
            lines.append(f"    resumed:       {_short(self.got)}")
        return "\n".join(lines)


@dataclass(frozen=True)
class CrashReport:
    """What [`check_crashes`][flowlib.testing.check_crashes] found.

    Attributes:
        flow: The factory's reference.
        findings: At most one (the first found, shrunk).
        runs: Interrupted runs made (each resumed), shrinking included.
        fired: How many of them were actually interrupted (the drawn point was reached).
        by_kind: Interrupted runs per kind.
        seconds: Time spent.
        reference: The uninterrupted run.
        budget_hit: The time budget stopped the search before ``max_examples``.
    """

    flow: str
    findings: tuple[CrashFinding, ...]
    runs: int
    fired: int
    by_kind: dict[str, int]
    seconds: float
    reference: RunOutcome | None = field(default=None, repr=False)
    budget_hit: bool = False

    @property
    def ok(self) -> bool:
        """Whether every interruption resumed to the uninterrupted outcome."""
        return not self.findings

    def __str__(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.by_kind.items()))
        budget = "; stopped by the time budget" if self.budget_hit else ""
        if self.ok:
            return (
                f"{self.flow}: survives crashes ({self.runs} interrupted runs: {kinds}; "
                f"{self.fired} reached their interruption; each resumed in a fresh process "
                f"to the uninterrupted outcome; {self.seconds:.1f} s{budget})"
            )
        head = (
            f"{self.flow}: {len(self.findings)} finding(s) in {self.runs} interrupted runs "
            f"({kinds}; {self.seconds:.1f} s{budget})"
        )
        return "\n".join([head, *map(str, self.findings)])


def _short(text: str | None, limit: int = 160) -> str:
    if text is None:
        return "(none)"
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


# --- the worker ----------------------------------------------------------------------


class _Worker:
    """The fork server (``_crash_worker.py``) for one factory, and the jobs run on it."""

    def __init__(self, reference: str, folder: Path, job_timeout: float) -> None:
        if not hasattr(os, "fork"):
            raise ContractError(
                "The crash check forks fresh processes (os.fork), which this platform does "
                "not have; run it on Linux or macOS."
            )
        self.folder = folder
        self.job_timeout = job_timeout
        self.jobs = 0
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._stderr = open(folder / "worker.log", "wb")  # noqa: SIM115 - closed in close()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "flowlib.testing._crash_worker", reference],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            text=True,
        )
        ready = self._read(max(job_timeout, 120.0))
        if not ready.get("ready"):
            self.close()
            raise InvalidArgumentError(
                f"The crash check cannot build `{reference}`: {ready.get('error')}",
                argument="factory",
            )

    def _read(self, timeout: float) -> dict[str, Any]:
        stdout = self._process.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], timeout)
        line = stdout.readline() if ready else ""
        if not line:
            log = (self.folder / "worker.log").read_text(errors="replace")[-2000:]
            raise ContractError(f"The crash check's worker process stopped answering.\n{log}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(
        self,
        db: Path,
        task: str | None,
        interruption: Interruption | None,
        model_calls: dict[str, list[int]] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Run one job; return the process's status and the run's outcome (None if the
        process died before writing it)."""
        self.jobs += 1
        out = self.folder / f"job{self.jobs}.json"
        job = {
            "db": str(db),
            "run_id": _RUN_ID,
            "task": task,
            "interrupt": None if interruption is None else interruption.plan(),
            "out": str(out),
            "log": str(self.folder / f"job{self.jobs}.log"),
            "timeout": self.job_timeout,
            "model_calls": model_calls or {},
        }
        stdin = self._process.stdin
        assert stdin is not None
        stdin.write(json.dumps(job) + "\n")
        stdin.flush()
        status = self._read(self.job_timeout + 30.0)
        outcome = json.loads(out.read_text()) if out.exists() else None
        return status, outcome

    def log_of_last(self) -> str:
        path = self.folder / f"job{self.jobs}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()


# --- comparing -----------------------------------------------------------------------


def _outcome(data: dict[str, Any]) -> RunOutcome:
    return RunOutcome(
        tuple((str(n), str(s), str(t)) for n, s, t in data.get("messages", [])),
        data.get("stop_reason"),
        tuple(data.get("records", [])),
    )


@dataclass
class _Difference:
    rule: CrashRule
    node: str
    position: int | None
    expected: str | None
    got: str | None
    detail: str


def _same_stop(want: str | None, got: str | None) -> bool:
    """Whether two stop reasons agree. A completion's note about dead ends and waiting
    joins is left out: a run resumed after its last turn was recorded (killed before its
    stop checkpoint) completes without it, as the note is not checkpointed."""
    if want == got:
        return True
    if want is None or got is None:
        return False
    return bool(
        want.startswith(COMPLETE_REASON)
        and got.startswith(COMPLETE_REASON)
        and want.split(":")[0] == got.split(":")[0]
    )


def _difference(want: RunOutcome, got: RunOutcome, kinds: dict[str, str]) -> _Difference | None:
    """The first difference of ``got`` from ``want``: per node, each node's messages in
    order (parallel branches may interleave differently after a resume), then the stop
    reason."""
    if want.messages == got.messages and _same_stop(want.stop_reason, got.stop_reason):
        return None
    theirs: dict[str, list[tuple[str, str, str]]] = {}
    for message in got.messages:
        theirs.setdefault(message[0], []).append(message)
    taken: dict[str, int] = {}
    for position, message in enumerate(want.messages):
        node = message[0]
        index = taken.get(node, 0)
        taken[node] = index + 1
        mine = theirs.get(node, [])
        expected = f"{message[1]}: {message[2]}"
        if index >= len(mine):
            before = want.messages[position - 1][0] if position else None
            after = f" after `{before}`'s message" if before else ""
            return _Difference(
                "routing_differs",
                node,
                position,
                expected,
                None,
                f"the resumed run never gave `{node}` this turn{after}: the path "
                "after resume differs (a condition, a selector_func, a router or a "
                "termination depends on something outside the checkpoint, or an earlier "
                "node's state was not restored)",
            )
        other = mine[index]
        if other[1:] != message[1:]:
            rule: CrashRule
            if kinds.get(node) == "function":
                rule = "outside_checkpoint"
                detail = (
                    f"function node `{node}` answered differently after resume: its reply "
                    "depends on something outside the checkpoint (a global, a closure, a "
                    "cache, the clock, randomness); derive it from the messages it is "
                    "given, or make it an agent whose save_state/load_state keep it"
                )
            else:
                rule = "state_not_restored"
                what = "nested team" if kinds.get(node) == "team" else "agent"
                detail = (
                    f"{what} `{node}` answered differently after resume: its "
                    "save_state/load_state do not keep what its replies depend on"
                )
            return _Difference(rule, node, position, expected, f"{other[1]}: {other[2]}", detail)
    capped = (want.stop_reason or "").startswith("Maximum number of turns")
    for node, mine in theirs.items():
        if len(mine) > taken.get(node, 0) and not capped:
            extra = mine[taken.get(node, 0)]
            return _Difference(
                "stop_differs",
                node,
                len(want.messages),
                None,
                f"{extra[1]}: {extra[2]}",
                f"the resumed run went on (`{node}` spoke again) where the uninterrupted "
                f"run stopped ({want.stop_reason!r}): a termination condition's state is "
                "not restored, or the stop depends on something outside the checkpoint",
            )
    if capped or _same_stop(want.stop_reason, got.stop_reason):
        return None  # only the interleaving of parallel branches differs, or max_turns
        # (which counts per run() call) let the resumed run go further
    return _Difference(
        "stop_differs",
        "",
        None,
        want.stop_reason,
        got.stop_reason,
        f"the resumed run stopped with {got.stop_reason!r} where the uninterrupted run "
        f"stopped with {want.stop_reason!r}: a termination condition's state is not "
        "restored, or the stop depends on something outside the checkpoint",
    )


# --- the search ----------------------------------------------------------------------


class _Found(FlowlibError):
    def __init__(self, finding: CrashFinding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def _interruptions(turns: int, checkpoints: int, steps: Sequence[str]) -> Any:
    last = max(turns - 1, 0)

    def named(kind: str, at: str) -> Callable[[int, int], Interruption]:
        def make(turn: int, hops: int) -> Interruption:
            node = steps[turn] if turn < len(steps) else None
            return Interruption(kind, turn, at, hops, node)  # type: ignore[arg-type]

        return make

    turn = st.integers(0, last)
    hops = st.integers(0, 3)
    return st.one_of(
        st.builds(named("exception", "start"), turn, st.just(0)),
        st.builds(named("exception", "after"), turn, st.just(0)),
        st.builds(named("sigkill", "after"), turn, st.just(0)),
        st.builds(named("cancel", "inside"), turn, hops),
        st.builds(named("sigkill", "inside"), turn, hops),
        st.builds(
            lambda n: Interruption("sigkill", n, "checkpoint"), st.integers(1, max(checkpoints, 1))
        ),
    )


def _reference_of(factory: Any) -> str:
    if isinstance(factory, str):
        return factory
    if not callable(factory):
        raise InvalidArgumentError(
            f"`factory` must be a function or a 'file.py:function' reference, not "
            f"{type(factory).__name__}.",
            argument="factory",
        )
    qualname = getattr(factory, "__qualname__", "")
    if "<locals>" in qualname or "<lambda>" in qualname or not qualname:
        raise InvalidArgumentError(
            f"`factory` {qualname or factory!r} is defined inside a function; the crash check "
            "builds the flow again in fresh processes, so define the factory at the top level "
            "of a module.",
            argument="factory",
        )
    module = sys.modules.get(factory.__module__)
    file = getattr(module, "__file__", None)
    if factory.__module__ == "__main__" or file is None:
        file = inspect.getsourcefile(factory)
    if file is None:
        raise InvalidArgumentError(
            f"`factory` {qualname}: its source file is unknown.", argument="factory"
        )
    return f"{file}:{qualname}"


def check_crashes(
    factory: Callable[..., Any] | str,
    *,
    task: str = DEFAULT_TASK,
    max_examples: int = 30,
    time_budget: float | None = 120.0,
    job_timeout: float = 60.0,
) -> CrashReport:
    """Interrupt the flow ``factory`` builds at hypothesis-chosen points, resume each run
    in a fresh process, and compare with the uninterrupted run (see the module's docs).

    Args:
        factory: A top-level function ``build(*, checkpoint_store=None)`` returning the team
            (it must pass the store to the team), or its reference ``"file.py:build"`` /
            ``"package.module:build"``.
        task: The task each run starts with.
        max_examples: Interruptions to try (shrinking a finding adds a few).
        time_budget: Seconds after which no new interruption is tried (None: no limit).
        job_timeout: Seconds one run (or resume) may take before it counts as hung.

    Raises:
        InvalidArgumentError: If the factory cannot be imported in a fresh process or
            takes no ``checkpoint_store``.
        ContractError: If the uninterrupted run fails, or the platform cannot fork.
    """
    reference = _reference_of(factory)
    if type(max_examples) is not int or max_examples < 1:
        raise InvalidArgumentError(
            f"max_examples must be an integer >= 1, not {max_examples!r}.",
            argument="max_examples",
        )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="flowlib-crash-") as tmp:
        folder = Path(tmp)
        worker = _Worker(reference, folder, job_timeout)
        try:
            return _search(worker, reference, folder, task, max_examples, time_budget, started)
        finally:
            worker.close()


def _uninterrupted(worker: _Worker, folder: Path, task: str, name: str) -> dict[str, Any]:
    status, outcome = worker.run(folder / f"{name}.db", task, None)
    if outcome is None or outcome.get("error"):
        error = outcome.get("error") if outcome else f"the process ended with {status}"
        trace = outcome.get("traceback", "") if outcome else worker.log_of_last()
        raise ContractError(f"The uninterrupted run of the flow failed: {error}\n{trace}")
    return outcome


def _search(
    worker: _Worker,
    reference: str,
    folder: Path,
    task: str,
    max_examples: int,
    time_budget: float | None,
    started: float,
) -> CrashReport:
    first = _uninterrupted(worker, folder, task, "reference")
    want = _outcome(first)
    kinds: dict[str, str] = first.get("kinds", {})
    steps: list[str] = first.get("steps", [])
    checkpoints = len(first.get("records", []))
    model_calls: dict[str, list[int]] = first.get("model_calls", {})

    def report(findings: tuple[CrashFinding, ...], runs: int = 0, **extra: Any) -> CrashReport:
        return CrashReport(
            reference,
            findings,
            runs,
            extra.get("fired", 0),
            extra.get("by_kind", {}),
            time.monotonic() - started,
            want,
            extra.get("budget_hit", False),
        )

    second = _outcome(_uninterrupted(worker, folder, task, "reference2"))
    plain = _difference(want, second, kinds)
    if plain is not None:
        finding = CrashFinding(
            "not_deterministic",
            (plain.node,) if plain.node else (),
            f"two uninterrupted runs already differ ({plain.detail.split(':')[0]}): the flow "
            "depends on timing, randomness or the clock even without a crash, so a resumed "
            "run cannot be compared with it; make it deterministic first",
            None,
            plain.position,
            plain.expected,
            plain.got,
            second,
            want,
        )
        return report((finding,))

    counts = {"runs": 0, "fired": 0}
    by_kind: dict[str, int] = {}
    budget = {"hit": False}

    def case(interruption: Interruption) -> None:
        if time_budget is not None and time.monotonic() - started > time_budget:
            budget["hit"] = True
            return  # out of time: every further example passes (shrinking stops too)
        counts["runs"] += 1
        label = interruption.kind
        by_kind[label] = by_kind.get(label, 0) + 1
        db = folder / f"case{counts['runs']}.db"
        status, first_half = worker.run(db, task, interruption)
        if first_half is not None and first_half.get("error"):
            raise ContractError(
                f"The run interrupted by {interruption} failed in an unexpected way: "
                f"{first_half['error']}\n{first_half.get('traceback', '')}"
            )
        fired = status.get("status") == "signal" or bool(first_half and first_half.get("fired"))
        counts["fired"] += fired
        status, resumed = worker.run(db, None, None, model_calls)
        if resumed is None or resumed.get("error"):
            error = resumed.get("error") if resumed else f"the process ended with {status}"
            node = interruption.node
            raise _Found(
                CrashFinding(
                    "resume_failed",
                    (node,) if node else (),
                    f"resuming the run in a fresh process failed: {error}",
                    interruption,
                )
            )
        got = _outcome(resumed)
        difference = _difference(want, got, kinds)
        if difference is not None:
            raise _Found(
                CrashFinding(
                    difference.rule,
                    (difference.node,) if difference.node else (),
                    difference.detail,
                    interruption,
                    difference.position,
                    difference.expected,
                    difference.got,
                    got,
                    want,
                )
            )

    found: list[CrashFinding] = []

    @settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        verbosity=Verbosity.quiet,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(_interruptions(len(steps), checkpoints, steps))
    def search(interruption: Interruption) -> None:
        try:
            case(interruption)
        except _Found as exc:
            found[:] = [exc.finding]
            raise

    try:
        search()
    except _Found:
        pass
    except Flaky:
        # The interruption failed once and passed when tried again: a SIGKILL or a
        # cancellation raced with a checkpoint write. The failure it showed is real.
        if not found:
            raise
    return report(
        tuple(found[-1:]),
        counts["runs"],
        fired=counts["fired"],
        by_kind=by_kind,
        budget_hit=budget["hit"],
    )


def assert_survives_crashes(
    factory: Callable[..., Any] | str,
    *,
    task: str = DEFAULT_TASK,
    max_examples: int = 30,
    time_budget: float | None = 120.0,
    job_timeout: float = 60.0,
) -> CrashReport:
    """Like [`check_crashes`][flowlib.testing.check_crashes], raising on a finding.

    Examples:
        ```python
        from flowlib.testing import assert_survives_crashes

        from myflow import build          # def build(*, checkpoint_store=None): ...

        def test_my_flow_survives_crashes():
            assert_survives_crashes(build, task="Plan the trip", max_examples=20)
        ```

    Raises:
        FlowNotCrashSafeError: (an ``AssertionError``) holding the report.
    """
    report = check_crashes(
        factory,
        task=task,
        max_examples=max_examples,
        time_budget=time_budget,
        job_timeout=job_timeout,
    )
    if not report.ok:
        raise FlowNotCrashSafeError(str(report))
    return report
