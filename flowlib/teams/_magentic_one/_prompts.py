"""The Magentic-One orchestrator's prompts, and how their placeholders are filled."""

from __future__ import annotations

import re

__all__ = [
    "ORCHESTRATOR_FINAL_ANSWER_PROMPT",
    "ORCHESTRATOR_PROGRESS_LEDGER_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT",
    "fill",
]

# Placeholders in braces ({task}, {team}, {names}, {facts}, {plan}) are filled in one pass;
# any other brace (the JSON example below, a user's own prompt) is left as written.

ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT = """\
We have been handed the request below. Before any work starts, take stock of what we \
already know and what we still have to find out. Draw on everything you know: trivia, \
science, puzzles, common sense.

The request:

{task}

Answer under these four headings, each with a short bullet list (write "None" under a \
heading with nothing to list):

1. GIVEN FACTS: facts, figures and constraints stated in the request itself.
2. FACTS TO LOOK UP: information the request depends on that has to be found, and where \
it could be found (a website, a file, a database, ...).
3. FACTS TO DERIVE: what has to be worked out by reasoning, calculation or simulation.
4. EDUCATED GUESSES: what you recall from memory, hunches and well-founded guesses.

Write only the four headings and their bullets."""

ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT = """\
These are the members of the team that will work on the request:

{team}

Using the facts above, write a short plan as a bullet list. For each step say which team \
member should carry it out. Not every member has to take part: leave out the ones the \
request does not need."""

ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT = """\
We are working on this request:

{task}

The team working on it:

{team}

What we know so far:

{facts}

The plan we will follow:

{plan}"""

ORCHESTRATOR_PROGRESS_LEDGER_PROMPT = """\
As a reminder, the request we are working on is:

{task}

and the team is:

{team}

Review the conversation so far and decide the next step by answering these questions, \
each with a short reason:

- is_request_satisfied: has the request been addressed completely and successfully? \
(false while anything it asks for is still missing)
- is_in_loop: are we going round in circles, repeating the same requests or getting the \
same answers as before?
- is_progress_being_made: are the recent messages moving us forward? (true when we are \
just starting; false when we are stuck or blocked, e.g. a needed file cannot be read)
- next_speaker: which team member should act next? One of: {names}
- instruction_or_question: what should that member do? Address them directly and give \
them everything they need to do it.

Reply with one JSON object and nothing else (no prose, no code fences), in exactly this \
shape:

{
  "is_request_satisfied": {"reason": "...", "answer": true or false},
  "is_in_loop": {"reason": "...", "answer": true or false},
  "is_progress_being_made": {"reason": "...", "answer": true or false},
  "next_speaker": {"reason": "...", "answer": "one of the names above"},
  "instruction_or_question": {"reason": "...", "answer": "what they should do"}
}"""

ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT = """\
We have not been making enough progress on this request:

{task}

This is the fact sheet we started from:

{facts}

Rewrite it with what the conversation has taught us: add new facts, correct wrong ones, \
and confirm, replace or drop educated guesses as the evidence suggests. Add at least one \
new educated guess about why we got stuck. Keep the four headings (GIVEN FACTS, FACTS TO \
LOOK UP, FACTS TO DERIVE, EDUCATED GUESSES) and write only the updated fact sheet."""

ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT = """\
Now write a new plan for the same team:

{team}

First say in one or two sentences what went wrong in the attempt so far and why. Then \
give the new plan as a short bullet list, naming for each step the team member who \
should carry it out, with hints that keep us from repeating the same mistakes."""

ORCHESTRATOR_FINAL_ANSWER_PROMPT = """\
The work on this request is over:

{task}

Using the whole conversation above, write the final answer for the person who made the \
request. Give the answer itself and the facts or results it rests on, as briefly as the \
request allows, without describing how the team worked. If the request could not be \
fully met, say so and give the best answer the conversation supports."""

_PLACEHOLDER = re.compile(r"\{(task|team|names|facts|plan)\}")


def fill(template: str, **values: str) -> str:
    """Replace ``{name}`` placeholders in one pass (inserted text is never re-scanned)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
