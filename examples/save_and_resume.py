"""Save and resume: stop a team, save its state to JSON, and continue in a fresh team.

    writer --> critic          (round robin)
      ^          |
      +----------+

The first run stops after three messages (``MaxMessageTermination(3)``) with the
critic's feedback unanswered. ``save_state()`` returns plain JSON-serialisable data,
which is written to a file in a temporary folder. A brand-new team (as a new process
would build it) loads that file with ``load_state()``, and ``run()`` with no task resumes
where the first run stopped: the writer revises, and the critic approves.

The model clients are passed to both teams, as a model is a service outside the team:
offline the scripted model simply goes on with its script.

Run offline: python examples/save_and_resume.py
With a real model: OPENAI_API_KEY=... python examples/save_and_resume.py
(the resumed writer's model sees the whole saved conversation, feedback included).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination, TextMentionTermination
from flowlib.models import ChatCompletionClient
from flowlib.teams import RoundRobinGroupChat
from flowlib.ui import Console

TASK = "Write a one-line motto for a community garden."


def model_clients() -> dict[str, ChatCompletionClient]:
    """One model client per agent (scripted offline)."""
    return {
        "writer": model_client(
            ["Grow together.", "Many hands, one harvest: grow food, grow neighbours."]
        ),
        "critic": model_client(["Too vague: say what grows besides plants.", "APPROVE"]),
    }


def build(clients: Mapping[str, ChatCompletionClient] | None = None) -> RoundRobinGroupChat:
    """Build the writer/critic team on the given model clients (fresh ones by default)."""
    clients = clients or model_clients()
    writer = AssistantAgent(
        "writer",
        model_client=clients["writer"],
        system_message="Write the motto; revise it when the critic gives feedback.",
    )
    critic = AssistantAgent(
        "critic",
        model_client=clients["critic"],
        system_message="Give one piece of feedback, or reply APPROVE if the motto is good.",
    )
    return RoundRobinGroupChat(
        [writer, critic],
        termination_condition=MaxMessageTermination(3)
        | TextMentionTermination("APPROVE", sources=["critic"]),
    )


async def main() -> None:
    """Run, stop, save to a file, load into a fresh team and resume."""
    clients = model_clients()
    team = build(clients)
    result = await Console(team.run_stream(task=TASK))
    print("stop reason:", result.stop_reason)

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "team_state.json"
        path.write_text(json.dumps(await team.save_state(), indent=2))
        print(f"saved {path.stat().st_size} bytes of state to {path.name}")

        fresh = build(clients)  # e.g. in another process, later
        await fresh.load_state(json.loads(path.read_text()))

    print("resuming the fresh team with run() and no task:")
    result = await Console(fresh.run_stream())
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
