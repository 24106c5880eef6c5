"""A conditional branch: a classifier's answer picks one of two paths.

                 +--is_bug-->  bug_triager
    classifier --+
                 +--is_question-->  support_agent

The two edges carry Python callables that look at the classifier's message; only the
edge whose callable returns True fires, so each run visits exactly one branch. The
same team is run twice, once for each branch. ``is_question`` is the negation of
``is_bug``, so a reply that starts with neither YES nor NO still goes somewhere
(``flowlib check`` finds the dead end a plain "starts with NO" test leaves).

Run offline: python examples/conditional_branch.py
With a real model: OPENAI_API_KEY=... python examples/conditional_branch.py
(the model classifies each ticket; it is told to start its answer with YES or NO).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.messages import BaseChatMessage
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.ui import Console

TICKETS = [
    "The app crashes every time I press Save on an empty document.",
    "How do I export my notes as a PDF?",
]


def is_bug(message: BaseChatMessage) -> bool:
    """The classifier said YES: the ticket reports a bug."""
    return message.to_model_text().strip().upper().startswith("YES")


def is_question(message: BaseChatMessage) -> bool:
    """The classifier did not say YES: the ticket is treated as a question."""
    return not is_bug(message)


def build() -> GraphFlow:
    """Build the branching graph on fresh agents."""
    classifier = AssistantAgent(
        "classifier",
        model_client=model_client(
            ["YES - something fails that should work.", "NO - the user asks how to do a thing."]
        ),
        system_message="Is this support ticket a bug report? Start your answer with YES or NO.",
    )
    bug_triager = AssistantAgent(
        "bug_triager",
        model_client=model_client(["Filed BUG-231 (P1): crash on Save with an empty document."]),
        system_message="File the bug: one line with an id, a priority and a title.",
    )
    support_agent = AssistantAgent(
        "support_agent",
        model_client=model_client(["Open the note, then choose File > Export > PDF."]),
        system_message="Answer the user's question in one or two sentences.",
    )
    builder = DiGraphBuilder()
    builder.add_node(classifier).add_node(bug_triager).add_node(support_agent)
    builder.add_edge(classifier, bug_triager, condition=is_bug)
    builder.add_edge(classifier, support_agent, condition=is_question)
    return GraphFlow(builder.get_participants(), builder.build())


async def main() -> None:
    """Run one ticket per branch; print each stream, path and stop reason."""
    team = build()
    for ticket in TICKETS:
        await team.reset()  # a new ticket: forget the previous conversation
        result = await Console(team.run_stream(task=ticket))
        print("path:", " -> ".join(team.trace.steps))
        print("stop reason:", result.stop_reason)
        print()


if __name__ == "__main__":
    asyncio.run(main())
