"""Property tests measure no wall time: a slow example on a busy machine is not a failure
(tests/conftest.py loads a hypothesis profile without a deadline)."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st


def test_the_profile_has_no_deadline() -> None:
    assert settings().deadline is None


@settings(max_examples=3)
@given(st.integers())
def test_an_example_slower_than_hypothesis_default_deadline_passes(number: int) -> None:
    time.sleep(0.25)  # over the default 200 ms deadline
    assert isinstance(number, int)
