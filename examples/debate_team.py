"""A team of your own: two debaters alternate, a judge decides when to stop.

    pro --> con --> judge
     ^                |
     +----------------+      (taken while the judge's reply has no "VERDICT")

``DebateTeam`` is written only against flowlib's public names, as docs/extending.md
walks through: a ``GraphPattern`` says what its graph allows and how it is drawn,
``build_graph`` turns the participants into that graph, a ``TeamPolicy`` explains the
stop, a ``TeamConfig`` subclass holds its one option, and the class keyword
``provider=`` registers it, so it runs, streams, checkpoints and resumes, dumps and loads
its config, draws, and is explored by ``flowlib check`` like the built-in teams. Offline,
the judge asks for one more round, then gives its verdict.

Run offline: python examples/debate_team.py
With a real model: OPENAI_API_KEY=... python examples/debate_team.py
(the judge decides; max_turns=12 bounds a debate the judge never ends).
Check it: flowlib check examples/debate_team.py:build
Crash-test it: flowlib check --crash examples/debate_team.py:build
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from _common import model_client
from typing_extensions import Unpack

from flowlib.agents import AssistantAgent
from flowlib.base import ChatAgent, Team
from flowlib.checkpoint import CheckpointStore
from flowlib.errors import InvalidArgumentError
from flowlib.graph import Contains, DiGraph, GraphPattern, Not
from flowlib.messages import BaseChatMessage
from flowlib.teams import BaseGroupChat, DiGraphBuilder, TeamConfig, TeamOptions, TeamPolicy
from flowlib.ui import Console

DEBATE = GraphPattern(
    "debate",
    title="debate",
    note="the debaters alternate; the judge's verdict ends it",
)
"""How the validator and the drawing treat a debate's graph (its loop has an exit: the
judge's edge back is conditional, so no trait needs to relax a rule)."""


class DebatePolicy(TeamPolicy):
    """Says why a debate ended: the judge's reply held the verdict, so its edge back to
    the first debater did not fire."""

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict

    def describe_dead_end(self, node: str, final: BaseChatMessage | None) -> str | None:
        if final is not None and self.verdict in final.to_model_text():
            return f"`{node}` gave the verdict: {final.to_model_text()}"
        return None


class DebateConfig(TeamConfig):
    """A debate's config: the common team fields and the verdict marker."""

    verdict: str = "VERDICT"


class DebateTeam(BaseGroupChat, pattern=DEBATE, provider="examples.debate_team.DebateTeam"):
    """Two debaters take turns, then the judge speaks; a judge's reply containing
    ``verdict`` ends the run, any other reply starts another round.

    Args:
        participants: The two debaters, then the judge (agents or nested teams).
        verdict: The text whose presence in the judge's reply ends the debate.
        **options: Every team's options (``TeamOptions``): ``max_turns``,
            ``termination_condition``, ``checkpoint_store``, ...
    """

    DEFAULT_DESCRIPTION = "Two debaters argue in turns; a judge decides when to stop."
    component_config_schema = DebateConfig

    def __init__(
        self,
        participants: Sequence[ChatAgent | Team],
        *,
        verdict: str = "VERDICT",
        **options: Unpack[TeamOptions],
    ) -> None:
        if not isinstance(verdict, str) or not verdict.strip():
            raise InvalidArgumentError(
                f"verdict must be a non-empty string, not {verdict!r}.", argument="verdict"
            )
        self.verdict = verdict  # set first: build_graph reads it
        super().__init__(participants, policy=DebatePolicy(verdict), **options)

    def build_graph(self, participants: Sequence[ChatAgent | Team]) -> DiGraph:
        """``first -> second -> judge``, and ``judge -> first`` until the verdict."""
        if len(participants) != 3:
            raise InvalidArgumentError(
                f"DebateTeam takes two debaters and a judge, got {len(participants)} "
                "participants; pass [first, second, judge].",
                argument="participants",
            )
        first, second, judge = participants
        builder = DiGraphBuilder().add_node(first).add_node(second).add_node(judge)
        builder.add_edge(first, second).add_edge(second, judge)
        builder.add_edge(judge, first, condition=Not(condition=Contains(text=self.verdict)))
        return builder.set_entry_point(first).build()

    def config_fields(self) -> dict[str, object]:
        """The verdict marker (the common fields are written by BaseGroupChat)."""
        return {"verdict": self.verdict}


TASK = "Motion: remote work is better than office work."


def build(*, checkpoint_store: CheckpointStore | None = None) -> DebateTeam:
    """Build the debate on fresh agents (checkpointed into ``checkpoint_store`` if given:
    ``flowlib check --crash examples/debate_team.py:build`` crash-tests it that way)."""
    pro = AssistantAgent(
        "pro",
        model_client=model_client(
            [
                "Remote work saves hours of commuting every week.",
                "Focus time at home beats an open-plan office.",
            ]
        ),
        system_message="Argue for the motion in one or two sentences.",
    )
    con = AssistantAgent(
        "con",
        model_client=model_client(
            [
                "Teams learn faster side by side.",
                "Quiet rooms exist in offices too.",
            ]
        ),
        system_message="Argue against the motion in one or two sentences.",
    )
    judge = AssistantAgent(
        "judge",
        model_client=model_client(
            [
                "Both sides need one more argument.",
                "VERDICT: pro wins; commuting time is the strongest point.",
            ]
        ),
        system_message=(
            "Judge the debate. When one side has clearly won, reply 'VERDICT: ' and the "
            "winner; otherwise say what is missing."
        ),
    )
    return DebateTeam([pro, con, judge], max_turns=12, checkpoint_store=checkpoint_store)


async def main() -> None:
    """Run the debate, print its stream and how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
