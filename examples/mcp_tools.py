"""MCP tools: an agent uses the tools of a Model Context Protocol server through a workbench.

    facts_agent   (a one-agent team; stops at its first text answer)
      +- McpWorkbench(StdioServerParams(python examples/_mcp_server.py))
           |- convert_temperature(celsius)
           +- city_population(city)

``McpWorkbench`` starts the server (here a subprocess speaking MCP on stdin/stdout, written
with the MCP SDK's ``FastMCP`` in ``examples/_mcp_server.py``), lists its tools for the
agent at the start of each turn and sends each call to it. A tool that fails on the server
(``city_population`` of an unknown city) comes back to the model as an error result, not
an exception. ``SseServerParams`` and ``StreamableHttpServerParams`` reach HTTP servers the
same way. Needs the ``mcp`` package (``pip install 'flowlib[mcp]'``).

Run offline: python examples/mcp_tools.py
With a real model: OPENAI_API_KEY=... python examples/mcp_tools.py
(the model decides which MCP tools to call; the server and its tools are real either way).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination, TextMessageTermination
from flowlib.teams import RoundRobinGroupChat
from flowlib.testing import tool_calls
from flowlib.tools.mcp import McpWorkbench, StdioServerParams
from flowlib.ui import Console

TASK = "It is 21 °C in Lisbon. What is that in Fahrenheit, and how many people live there?"
SERVER = StdioServerParams(
    command=sys.executable, args=[str(Path(__file__).with_name("_mcp_server.py"))]
)


def build(workbench: McpWorkbench | None = None) -> RoundRobinGroupChat:
    """Build a one-agent team whose agent uses the MCP server's tools."""
    agent = AssistantAgent(
        "facts_agent",
        model_client=model_client(
            [
                tool_calls(
                    ("convert_temperature", {"celsius": 21}),
                    ("city_population", {"city": "Lisbon"}),
                    ("city_population", {"city": "Atlantis"}),
                ),
                "21 °C is 69.8 °F, and about 545,000 people live in Lisbon.",
            ]
        ),
        workbench=workbench or McpWorkbench(SERVER),
        reflect_on_tool_use=True,
        system_message="Answer with the tools you have.",
    )
    return RoundRobinGroupChat(
        [agent],
        termination_condition=TextMessageTermination("facts_agent") | MaxMessageTermination(6),
    )


async def show_resources_and_prompts(workbench: McpWorkbench) -> None:
    """What else the server offers: resources, resource templates and prompts."""
    resources = await workbench.list_resources()
    print("resources:", ", ".join(str(resource.uri) for resource in resources.resources))
    templates = await workbench.list_resource_templates()
    print("templates:", ", ".join(t.uriTemplate for t in templates.resourceTemplates))
    oslo = await workbench.read_resource("facts://city/Oslo")  # a template, filled in
    print("read facts://city/Oslo:", oslo.contents[0].text)
    prompt = await workbench.get_prompt("compare", {"first": "Oslo", "second": "Kyoto"})
    print("prompt compare:", prompt.messages[0].content.text)


async def main() -> None:
    """Start the server, run the team, print its stream and how it stopped."""
    async with McpWorkbench(SERVER) as workbench:  # one server process for the whole run
        tools = await workbench.list_tools()
        print("MCP tools:", ", ".join(tool["name"] for tool in tools))
        await show_resources_and_prompts(workbench)
        team = build(workbench)
        result = await Console(team.run_stream(task=TASK))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
