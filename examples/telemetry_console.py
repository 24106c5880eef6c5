"""OpenTelemetry: every team run, node turn, model call and tool call as a span, on the console.

    planner -> research (a nested round-robin team: searcher, summarizer) -> writer
            -> checker (calls the word_count tool)

flowlib only depends on ``opentelemetry-api``; it traces as soon as an SDK tracer provider
is set, and costs nothing otherwise. This example sets one (``opentelemetry-sdk``) whose
``ConsoleSpanExporter`` prints each span as it ends, one line each here (drop the
``formatter`` to get the full JSON). Spans end children first, so each line shows its own
id and its parent's: ``invoke_workflow`` (the team) > ``invoke_agent`` (an agent's turn)
or ``node_turn`` (the nested team's) > ``chat`` / ``execute_tool``, and the nested team's
``invoke_workflow`` inside the ``node_turn`` that ran it. Names and ``gen_ai.*`` attributes
follow the OpenTelemetry GenAI semantic conventions (``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``). To send
spans to a collector instead, use an OTLP exporter (``opentelemetry-exporter-otlp``) in
place of the console one.

Run offline: python examples/telemetry_console.py
With a real model: OPENAI_API_KEY=... python examples/telemetry_console.py
(the spans are the same; model names and token counts become the real ones).
"""

from __future__ import annotations

import asyncio

from _common import model_client
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from flowlib.agents import AssistantAgent
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat
from flowlib.testing import tool_calls

TASK = "A two-sentence note on why bees dance."

SHOWN = (
    "flowlib.node.kind",
    "flowlib.turn.index",
    "flowlib.activation.group",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.tool.name",
    "flowlib.run.stop_reason",
)


def one_line(span: ReadableSpan) -> str:
    """A span as ``name  [id < parent id]  key=value ...``."""
    own = f"{span.context.span_id:016x}"[-6:] if span.context else "?"
    parent = f"{span.parent.span_id:016x}"[-6:] if span.parent else "root"
    attributes = span.attributes or {}
    shown = " ".join(f"{key}={attributes[key]}" for key in SHOWN if key in attributes)
    return f"{span.name:<28} [{own} < {parent}]  {shown}\n"


def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def build() -> GraphFlow:
    """Build the pipeline: a planner, a nested research team, a writer and a checker."""
    planner = AssistantAgent("planner", model_client=model_client(["Plan: research, write."]))
    searcher = AssistantAgent(
        "searcher", model_client=model_client(["Bees dance to show where food is."])
    )
    summarizer = AssistantAgent(
        "summarizer", model_client=model_client(["Summary: the waggle dance gives directions."])
    )
    research = RoundRobinGroupChat([searcher, summarizer], max_turns=2, name="research")
    writer = AssistantAgent(
        "writer",
        model_client=model_client(
            ["Honeybees dance to tell their sisters where flowers are. The angle points the way."]
        ),
    )
    checker = AssistantAgent(
        "checker",
        model_client=model_client(
            [tool_calls(("word_count", {"text": "Honeybees dance ..."})), "Short enough."]
        ),
        tools=[word_count],
        reflect_on_tool_use=True,
        system_message="Check the note's length with word_count, then say if it is fine.",
    )
    builder = DiGraphBuilder()
    for participant in (planner, research, writer, checker):
        builder.add_node(participant)
    builder.add_edge("planner", "research").add_edge("research", "writer")
    builder.add_edge("writer", "checker")
    return GraphFlow(builder.get_participants(), builder.build(), name="note_pipeline")


async def main() -> None:
    """Trace one run to the console, then print how it stopped."""
    provider = TracerProvider(resource=Resource.create({"service.name": "flowlib-example"}))
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(formatter=one_line)))
    trace.set_tracer_provider(provider)

    result = await build().run(task=TASK)
    provider.shutdown()
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
