"""The timeout budget: every test must finish well inside its pytest timeout.

A test that takes a quarter of its timeout on an idle machine fails on a machine four
times slower. The rule (docs/testing.md): each test finishes within 1/4 of its timeout at
a 4x slowdown, i.e. within 1/16 of its timeout normally. This plugin (its hooks are
imported by tests/conftest.py) measures every test (setup + call + teardown, as
pytest-timeout counts) in wall-clock and CPU seconds (the worker's own CPU plus that of the
child processes it waited for), compares the wall-clock time with the test's timeout (its
``timeout`` marker, else ``--timeout``, else the ``timeout`` ini value) and prints the
tests over budget in the terminal summary.

Options:
    ``--budget-fraction=N`` (default 16): a test is over budget past timeout / N.
    ``--budget-fail[=N]``: a test over timeout / N (default: the fraction above) fails the
    session (exit status 1); the list says which.
    ``--budget-json=PATH``: append each test's figures to PATH as it finishes (JSON Lines).

A busy machine makes every test slower, so scripts/test.sh lists the tests over 1/16 but
fails only on a test over 1/4 of its timeout (``--budget-fail 4``: it used a quarter of
its timeout in that very run, so a further 4x slowdown would time it out); the 1/16 rule
is checked on a quieter run (docs/choices.md, "The test command's speed").
"""

from __future__ import annotations

import json
import resource
from dataclasses import asdict, dataclass
from typing import Any

import pytest

__all__ = [
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_logreport",
    "pytest_runtest_setup",
    "pytest_runtest_teardown",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]

_CPU_KEY = "budget_cpu_seconds"
_TIMEOUT_KEY = "budget_timeout"


@dataclass
class _Figure:
    nodeid: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    timeout: float = 0.0
    outcome: str = "passed"


class _Budget:
    def __init__(self) -> None:
        self.figures: dict[str, _Figure] = {}
        self.json_path: str | None = None

    def over(self, fraction: float) -> list[_Figure]:
        late = [
            f
            for f in self.figures.values()
            if f.timeout > 0 and f.outcome != "skipped" and f.seconds > f.timeout / fraction
        ]
        return sorted(late, key=lambda f: f.seconds / f.timeout, reverse=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("flowlib timeout budget")
    group.addoption(
        "--budget-fraction",
        type=float,
        default=16.0,
        help="a test is over budget when it takes more than its timeout divided by this "
        "(default 16: a quarter of the timeout at a 4x slowdown)",
    )
    group.addoption(
        "--budget-fail",
        type=float,
        nargs="?",
        const=-1.0,
        default=0.0,
        metavar="N",
        help="fail the session when a test takes more than its timeout divided by N "
        "(without N: by the --budget-fraction)",
    )
    group.addoption(
        "--budget-json",
        default=None,
        help="append each test's wall-clock and CPU seconds and timeout to this file as it "
        "finishes (JSON Lines)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        _FIGURES.json_path = config.getoption("budget_json")


def _timeout(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        value = marker.kwargs.get("timeout", marker.args[0] if marker.args else None)
        if value is not None:
            return float(value)
    option = item.config.getoption("timeout", default=None)
    if option is not None:
        return float(option)
    try:
        ini = item.config.getini("timeout")
    except ValueError:  # pytest-timeout is not installed
        return 0.0
    return float(ini) if ini else 0.0


_FORKED_CPU = [0.0]


def count_child_cpu(seconds: float) -> None:
    """Count ``seconds`` of CPU spent by a process this one did not start and so cannot
    reap: the children of tests/_forked.py's zygote."""
    _FORKED_CPU[0] += seconds


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return reaped + _FORKED_CPU[0]


_STARTED = pytest.StashKey[float]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_STARTED] = _cpu()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    try:
        return (yield)
    finally:
        # Read when the teardown report is made, so it reaches an xdist controller too.
        started = item.stash.get(_STARTED, None)
        if started is not None:
            item.user_properties.append((_CPU_KEY, round(_cpu() - started, 3)))
        item.user_properties.append((_TIMEOUT_KEY, _timeout(item)))


# pytest_runtest_logreport gets no config: the one pytest session of a process keeps its
# figures here.
_FIGURES = _Budget()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    figure = _FIGURES.figures.setdefault(report.nodeid, _Figure(report.nodeid))
    figure.seconds += report.duration
    if report.skipped and report.when == "setup":
        figure.outcome = "skipped"
    elif report.failed:
        figure.outcome = "failed"
    for key, value in report.user_properties:
        if key == _CPU_KEY:
            figure.cpu_seconds = float(value)
        elif key == _TIMEOUT_KEY:
            figure.timeout = float(value)
    if report.when == "teardown" and _FIGURES.json_path:
        # One line per finished test, written at once: a run cut short keeps its figures.
        with open(_FIGURES.json_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(figure)) + "\n")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_worker(config):
        return
    budget = _FIGURES
    fail = _fail_fraction(config)
    if fail and budget.over(fail) and exitstatus in (0, 5):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _fail_fraction(config: pytest.Config) -> float:
    """The N of ``--budget-fail N`` (0: off)."""
    value: float = config.getoption("budget_fail")
    return float(config.getoption("budget_fraction")) if value < 0 else value


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _is_worker(config):
        return
    budget = _FIGURES
    fraction = config.getoption("budget_fraction")
    late = budget.over(fraction)
    if not late:
        return
    write = terminalreporter.write_line
    terminalreporter.section(f"tests over 1/{fraction:g} of their timeout", sep="=")
    for f in late:
        write(
            f"{f.seconds:7.1f} s wall {f.cpu_seconds:7.1f} s CPU  timeout {f.timeout:g} s "
            f"(budget {f.timeout / fraction:.1f} s)  {f.nodeid}"
        )
    fail = _fail_fraction(config)
    failing = budget.over(fail) if fail else []
    if failing:
        verdict = f"{len(failing)} over 1/{fail:g} of their timeout: fails the session"
    elif fail:
        verdict = f"none over 1/{fail:g} of its timeout, which would fail the session"
    else:
        verdict = "reported only"
    write(f"{len(late)} test(s) over budget ({verdict}; see docs/choices.md)")
