"""MagenticOneGroupChat: an orchestrator with a task ledger and a progress ledger.

The team compiles to a hub graph: an orchestrator router (node kind ``router``) with a
``Selected`` edge to every participant and an edge back from each of them. The
orchestrator works in two loops, as in the Magentic-One paper:

- **Outer loop (task ledger).** On the first turn of a task it asks its model for a fact
  sheet (given facts, facts to look up, facts to derive, educated guesses) and then for a
  plan, and publishes both, with the task and the team, as one chat message. It resets
  the participants and forgets its own transcript, so the ledger starts the work afresh.
- **Inner loop (progress ledger).** After every participant turn it asks its model for a
  JSON progress ledger: is the request satisfied, are we looping, are we making progress,
  who speaks next and what they should do. A satisfied request gets a final answer
  (``final_answer_prompt``) and ends the run with the ledger's reason. Otherwise the
  instruction is published, addressed to the next speaker, and that participant is
  selected. Turns judged stalled or looping count as stalls (others take one off the
  count); at ``max_stalls`` the orchestrator updates its facts and plan, publishes the new
  task ledger and starts the inner loop again with the count at zero.

A ledger that is not a JSON object, lacks keys or names an unknown speaker is asked for
again (the model is told what was wrong); after ``LEDGER_ATTEMPTS`` attempts the run
fails with a ``ValueError`` that says why. A turn commits nothing until all of its model
calls succeed, so ``run()`` with no task retries a failed turn cleanly.
"""

from ._ledger import PROGRESS_LEDGER_KEYS, ProgressLedger, parse_progress_ledger
from ._orchestrator import (
    LEDGER_ATTEMPTS,
    ORCHESTRATOR_NAME,
    MagenticOneOrchestrator,
    MagenticOneOrchestratorState,
    OrchestratorError,
)
from ._policy import MagenticOnePolicy
from ._team import MAGENTIC_ONE, MagenticOneGroupChat, MagenticOneGroupChatConfig

__all__ = [
    "LEDGER_ATTEMPTS",
    "MAGENTIC_ONE",
    "ORCHESTRATOR_NAME",
    "PROGRESS_LEDGER_KEYS",
    "MagenticOneGroupChat",
    "MagenticOneGroupChatConfig",
    "MagenticOneOrchestrator",
    "MagenticOneOrchestratorState",
    "MagenticOnePolicy",
    "OrchestratorError",
    "ProgressLedger",
    "parse_progress_ledger",
]
