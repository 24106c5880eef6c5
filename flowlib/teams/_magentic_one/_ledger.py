"""The progress ledger: what the orchestrator's model answers after each turn, parsed
and checked."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import FlowlibError

__all__ = [
    "PROGRESS_LEDGER_KEYS",
    "LedgerProblem",
    "ProgressLedger",
    "parse_progress_ledger",
    "quoted",
]

PROGRESS_LEDGER_KEYS = (
    "is_request_satisfied",
    "is_in_loop",
    "is_progress_being_made",
    "next_speaker",
    "instruction_or_question",
)
"""The keys of a progress ledger; each holds an object with a ``reason`` and an ``answer``."""
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}


def quoted(names: Sequence[str]) -> str:
    """``a``, ``b``: names as the messages show them."""
    return ", ".join(f"`{name}`" for name in names)


class LedgerProblem(FlowlibError, ValueError):
    """One unusable progress ledger; ``missing`` lists absent keys."""

    def __init__(self, message: str, *, missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)


@dataclass(frozen=True)
class ProgressLedger:
    """A parsed progress ledger: the orchestrator's answers for one inner-loop step.

    Attributes:
        is_request_satisfied: Whether the request is done.
        is_in_loop: Whether the team repeats itself.
        is_progress_being_made: Whether recent turns moved the work forward.
        next_speaker: The participant to act next ("" when the request is satisfied).
        instruction_or_question: What the next speaker should do.
        reasons: The model's reason for each answer, by key.
    """

    is_request_satisfied: bool
    is_in_loop: bool
    is_progress_being_made: bool
    next_speaker: str
    instruction_or_question: str
    reasons: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_stalled(self) -> bool:
        """Whether this step counts as a stall (looping or no progress)."""
        return self.is_in_loop or not self.is_progress_being_made


def _json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model answer: bare, in a code fence, or amid prose."""
    stripped = text.strip()
    candidates = [stripped]
    fenced = _FENCE.search(stripped)
    if fenced:
        candidates.append(fenced.group(1).strip())
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    start = stripped.find("{")
    while start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(stripped, start)
        except ValueError:
            start = stripped.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = stripped.find("{", start + 1)
    shown = stripped if len(stripped) <= 200 else stripped[:200] + "..."
    raise LedgerProblem(f"the answer is not a JSON object: {shown!r}")


def _flag(key: str, answer: Any) -> bool:
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, str):
        word = answer.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise LedgerProblem(f"`{key}.answer` must be true or false, not {answer!r}")


def _speaker(answer: Any, names: Sequence[str]) -> str:
    if isinstance(answer, str):
        cleaned = answer.strip().strip("`'\"").strip()
        if cleaned in names:
            return cleaned
        folded = [name for name in names if name.casefold() == cleaned.casefold()]
        if len(folded) == 1:
            return folded[0]
    raise LedgerProblem(
        f"the next speaker {answer!r} is not a participant; valid speakers are {quoted(names)}"
    )


def parse_progress_ledger(text: str, names: Sequence[str]) -> ProgressLedger:
    """Parse and check a model's progress ledger answer.

    Accepts the JSON object bare, in a code fence or surrounded by prose; booleans may be
    JSON booleans or the strings ``"true"``/``"false"`` (``yes``/``no``); a missing
    ``reason`` counts as empty. With one participant, ``next_speaker`` may be missing.

    Args:
        text: The model's answer.
        names: The participants' names (valid next speakers).

    Returns:
        The parsed ledger.

    Raises:
        ValueError: If the answer holds no JSON object, lacks keys (the message names
            them), has a non-boolean flag, or names an unknown next speaker while the
            request is not satisfied.

    Examples:
        >>> ledger = parse_progress_ledger(
        ...     '{"is_request_satisfied": {"reason": "done", "answer": true}, '
        ...     '"is_in_loop": {"reason": "", "answer": false}, '
        ...     '"is_progress_being_made": {"reason": "", "answer": true}, '
        ...     '"next_speaker": {"reason": "", "answer": "writer"}, '
        ...     '"instruction_or_question": {"reason": "", "answer": "-"}}',
        ...     ["writer"],
        ... )
        >>> ledger.is_request_satisfied, ledger.reasons["is_request_satisfied"]
        (True, 'done')
    """
    data = _json_object(text)
    if len(names) == 1 and not isinstance(data.get("next_speaker"), Mapping):
        data["next_speaker"] = {"reason": "The team has one member.", "answer": names[0]}
    missing = [
        key
        for key in PROGRESS_LEDGER_KEYS
        if not isinstance(data.get(key), Mapping) or "answer" not in data[key]
    ]
    if missing:
        raise LedgerProblem(
            f"it is missing the keys {quoted(missing)} (each must be an object with a "
            '"reason" and an "answer")',
            missing=missing,
        )
    answers = {key: data[key]["answer"] for key in PROGRESS_LEDGER_KEYS}
    reasons = {key: str(data[key].get("reason", "") or "") for key in PROGRESS_LEDGER_KEYS}
    satisfied = _flag("is_request_satisfied", answers["is_request_satisfied"])
    in_loop = _flag("is_in_loop", answers["is_in_loop"])
    progress = _flag("is_progress_being_made", answers["is_progress_being_made"])
    instruction = answers["instruction_or_question"]
    if not isinstance(instruction, str):
        instruction = json.dumps(instruction)
    if satisfied:
        speaker = ""
    elif len(names) == 1:
        speaker = names[0]
    else:
        speaker = _speaker(answers["next_speaker"], names)
    return ProgressLedger(
        is_request_satisfied=satisfied,
        is_in_loop=in_loop,
        is_progress_being_made=progress,
        next_speaker=speaker,
        instruction_or_question=instruction,
        reasons=reasons,
    )
