"""``flowlib check --crash`` and ``assert_survives_crashes``: a flow interrupted (exception,
cancellation, SIGKILL) and resumed in a fresh process must end as the uninterrupted run.

Sized for a busy machine: a few interruptions per test (each a forked run and a forked
resume); the searches with more examples are marked slow.
"""

from __future__ import annotations

import inspect
import io
from pathlib import Path
from typing import Any

import pytest

from flowlib.cli import main
from flowlib.errors import InvalidArgumentError
from flowlib.testing import (
    FlowNotCrashSafeError,
    Interruption,
    assert_survives_crashes,
    check_crashes,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FLOWS = HERE / "crash_flows.py"
EXAMPLES = ROOT / "examples"


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_check_crash_names_the_agent_whose_state_forgets_its_count(tmp_path: Path) -> None:
    code, text = _cli(
        "check",
        "--crash",
        f"{FLOWS}:build_forgetful",
        "--max-examples",
        "8",
        "-o",
        str(tmp_path / "cx"),
    )
    assert code == 1, text
    assert "[state_not_restored] `counter`" in text
    assert (
        "agent `counter` answered differently after resume: its save_state/load_state do "
        "not keep what its replies depend on" in text
    )
    assert "uninterrupted: 'counter: count 2'" in text
    assert "resumed:       'counter: count 1'" in text
    assert "interruption: " in text
    svg = (tmp_path / "cx.svg").read_text()
    assert "counter" in svg
    assert "counter" in (tmp_path / "cx.html").read_text()


def test_check_crash_passes_the_same_flow_once_its_state_keeps_the_count() -> None:
    code, text = _cli("check", "--crash", f"{FLOWS}:build_fixed", "--max-examples", "8")
    assert code == 0, text
    assert "survives crashes (8 interrupted runs" in text


def test_a_function_node_counting_in_a_global_is_caught() -> None:
    with pytest.raises(FlowNotCrashSafeError) as caught:
        assert_survives_crashes(f"{FLOWS}:build_global", max_examples=8)
    text = str(caught.value)
    assert "[outside_checkpoint] `tally`" in text
    assert "function node `tally` answered differently after resume" in text


def test_the_report_holds_the_shrunk_interruption_and_both_messages() -> None:
    from crash_flows import build_forgetful  # a top-level function, found by its file

    report = check_crashes(build_forgetful, max_examples=8)
    assert not report.ok
    finding = report.findings[0]
    assert finding.rule == "state_not_restored" and finding.nodes == ("counter",)
    assert isinstance(finding.interruption, Interruption)
    assert finding.expected == "counter: count 2" and finding.got == "counter: count 1"
    assert finding.outcome is not None and finding.outcome.records


def test_parallel_branches_of_honest_function_nodes_survive() -> None:
    report = assert_survives_crashes(f"{FLOWS}:build_honest", max_examples=6)
    assert report.ok and report.runs == 6
    assert report.fired >= 1


def test_a_scripted_model_goes_on_with_its_script_after_resume() -> None:
    """A ReplayChatCompletionClient answers by position (process state); the check moves
    it past the answers the recorded turns used, as the uninterrupted run counted them."""
    report = assert_survives_crashes(f"{FLOWS}:build_scripted", max_examples=6)
    assert report.ok and report.fired >= 1


def _examples_taking_a_store() -> list[str]:
    found = []
    for path in sorted(EXAMPLES.glob("*.py")):
        source = path.read_text()
        if "def build(" in source and "checkpoint_store" in source:
            found.append(path.name)
    return found


def test_the_examples_taking_a_store_are_found() -> None:
    assert "batch_eval.py" in _examples_taking_a_store()


@pytest.mark.parametrize("example", _examples_taking_a_store())
def test_example_survives_crashes(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the scripted models
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    report = assert_survives_crashes(f"{EXAMPLES / example}:build", max_examples=4)
    assert report.ok


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize("example", _examples_taking_a_store())
def test_example_survives_many_crashes(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert assert_survives_crashes(f"{EXAMPLES / example}:build", max_examples=40).ok


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_fixed_flow_survives_many_crashes() -> None:
    assert assert_survives_crashes(f"{FLOWS}:build_fixed", max_examples=60).ok


def _local_factory() -> Any:
    def build(*, checkpoint_store: Any = None) -> Any:
        raise AssertionError("never built")

    return build


def test_bad_factories_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="defined inside a function"):
        check_crashes(_local_factory())
    flow = tmp_path / "flow.py"
    flow.write_text("def build():\n    return None\n")
    with pytest.raises(InvalidArgumentError, match="takes no `checkpoint_store`"):
        check_crashes(f"{flow}:build")
    code, _ = _cli("check", "--crash", f"{flow}:build")
    assert code != 0


def test_crash_check_is_documented_with_its_rules() -> None:
    from flowlib.testing import CRASH_RULES

    doc = inspect.getdoc(check_crashes) or ""
    assert "fresh process" in doc
    module_doc = inspect.getmodule(check_crashes).__doc__ or ""  # type: ignore[union-attr]
    for rule in CRASH_RULES:
        assert f"``{rule}``" in module_doc
