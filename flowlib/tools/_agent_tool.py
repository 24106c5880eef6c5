"""``AgentTool`` and ``TeamTool``: an agent or a whole team, called by a model as a tool.

The tool takes one argument, ``task`` (a string), runs the agent or team on it and
returns the [`TaskResult`][flowlib.base.TaskResult]; the model sees the run's chat messages as
text (or only the last one). `TaskRunnerTool.run_json_stream()` yields the inner
run's events and messages as they happen, then the result. Cancelling the tool's token
cancels the inner run.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from .._cancellation import CancellationToken
from .._english import a
from ..component import ComponentModel, dump_component, load_field
from ..component.internal import register_builtin
from ..errors import FlowlibError
from ._base import BaseTool

if TYPE_CHECKING:
    from ..base import ChatAgent, TaskResult, Team
    from ..messages import BaseAgentEvent, BaseChatMessage

__all__ = [
    "AgentTool",
    "AgentToolConfig",
    "TaskRunnerTool",
    "TaskRunnerToolArgs",
    "TeamTool",
    "TeamToolConfig",
]


class TaskRunnerToolArgs(BaseModel):
    """The one argument of an agent or team tool."""

    task: str = Field(description="The task to be executed.")


class TaskRunnerTool(BaseTool[TaskRunnerToolArgs, Any]):
    """A tool that runs a task runner (an agent or a team); see `AgentTool` and
    `TeamTool`."""

    def __init__(
        self,
        task_runner: Any,
        name: str,
        description: str,
        *,
        return_value_as_last_message: bool = False,
    ) -> None:
        from ..base import TaskResult

        super().__init__(TaskRunnerToolArgs, TaskResult, name, description)
        self._task_runner = task_runner
        self._return_value_as_last_message = return_value_as_last_message

    @property
    def return_value_as_last_message(self) -> bool:
        """Whether the model sees only the run's last message."""
        return self._return_value_as_last_message

    async def run(self, args: TaskRunnerToolArgs, cancellation_token: CancellationToken) -> Any:
        """Run the agent or team on ``args.task``; return its ``TaskResult``.

        Raises:
            asyncio.CancelledError: If ``cancellation_token`` is cancelled.
        """
        result: TaskResult | None = None
        async with aclosing(self.run_stream(args, cancellation_token)) as stream:
            async for item in stream:
                if _is_result(item):
                    result = item  # type: ignore[assignment]
        assert result is not None  # run_stream always ends with the result
        return result

    async def run_stream(
        self, args: TaskRunnerToolArgs, cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Run the agent or team, yielding its events and messages, then the ``TaskResult``.

        Raises:
            asyncio.CancelledError: If ``cancellation_token`` is cancelled.
        """
        stream = self._task_runner.run_stream(task=args.task, cancellation_token=cancellation_token)
        async with aclosing(stream):
            async for item in stream:
                yield item

    async def run_json_stream(
        self,
        args: Mapping[str, Any],
        cancellation_token: CancellationToken,
        call_id: str | None = None,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Validate ``args``, then stream the run like `run_stream()`."""
        validated = TaskRunnerToolArgs.model_validate(dict(args))
        async with aclosing(self.run_stream(validated, cancellation_token)) as stream:
            async for item in stream:
                yield item

    def return_value_as_string(self, value: Any) -> str:
        """The run as the model sees it: ``"<source>: <text>"`` per chat message (the
        task's own messages left out), blank-line separated; or only the last message's
        text with ``return_value_as_last_message``."""
        from ..messages import BaseChatMessage

        if not _is_result(value):
            return super().return_value_as_string(value)
        messages = [m for m in value.messages if isinstance(m, BaseChatMessage)]
        if self._return_value_as_last_message:
            return messages[-1].to_model_text() if messages else ""
        return "\n\n".join(
            f"{m.source}: {m.to_model_text()}" for m in messages if m.source != "user"
        )

    async def save_state_json(self) -> Mapping[str, Any]:
        """The state of the agent or team."""
        return dict(await self._task_runner.save_state())

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        """Restore the agent's or team's state."""
        await self._task_runner.load_state(state)


def _load_runner(model: ComponentModel, field: str, kind: type, tool: str) -> Any:
    """Build the agent or team of a tool's config and check its kind."""
    runner = load_field(model, field)
    if not isinstance(runner, kind):
        raise AgentToolTypeError(f"{tool}'s config builds {a(type(runner).__name__)}.")
    return runner


def _is_result(value: object) -> bool:
    from ..base import TaskResult

    return isinstance(value, TaskResult)


class AgentToolConfig(BaseModel):
    """The component config of `AgentTool`."""

    agent: ComponentModel
    return_value_as_last_message: bool = False


class AgentTool(TaskRunnerTool):
    """An agent as a tool: named and described like the agent, it runs ``agent.run(task)``.

    The agent keeps its state between calls (it is the same agent object), as AutoGen's
    does; a handoff or a tool call inside the agent stays inside its run.

    Args:
        agent: The agent.
        return_value_as_last_message: Give the model only the last message of the run
            instead of every chat message.

    Raises:
        TypeError: If ``agent`` is not a chat agent.

    Examples:
        >>> import asyncio
        >>> from flowlib.agents import AssistantAgent
        >>> from flowlib.models import ReplayChatCompletionClient
        >>> writer = AssistantAgent(
        ...     "writer", model_client=ReplayChatCompletionClient(["A haiku."]),
        ...     description="Writes poems.",
        ... )
        >>> tool = AgentTool(writer)
        >>> tool.name, tool.description
        ('writer', 'Writes poems.')
        >>> result = asyncio.run(tool.run_json({"task": "a haiku"}, CancellationToken()))
        >>> tool.return_value_as_string(result)
        'writer: A haiku.'
    """

    component_type: ClassVar[str] = "tool"
    component_config_schema: ClassVar[type[BaseModel]] = AgentToolConfig

    def __init__(self, agent: ChatAgent, return_value_as_last_message: bool = False) -> None:
        from ..base import ChatAgent

        if not isinstance(agent, ChatAgent):
            raise AgentToolTypeError(
                f"AgentTool needs a chat agent (AssistantAgent, ...), not "
                f"{type(agent).__name__}; use TeamTool for a team."
            )
        self._agent = agent
        super().__init__(
            agent,
            agent.name,
            agent.description,
            return_value_as_last_message=return_value_as_last_message,
        )

    @property
    def agent(self) -> ChatAgent:
        """The agent."""
        return self._agent

    def _to_config(self) -> AgentToolConfig:
        return AgentToolConfig(
            agent=dump_component(self._agent),
            return_value_as_last_message=self._return_value_as_last_message,
        )

    @classmethod
    def _from_config(cls, config: AgentToolConfig) -> AgentTool:
        from ..base import ChatAgent

        agent = _load_runner(config.agent, "agent", ChatAgent, "AgentTool")
        return cls(agent, return_value_as_last_message=config.return_value_as_last_message)


class TeamToolConfig(BaseModel):
    """The component config of `TeamTool`."""

    name: str
    description: str
    team: ComponentModel
    return_value_as_last_message: bool = False


class TeamTool(TaskRunnerTool):
    """A team as a tool: it runs ``team.run(task)``.

    The team keeps its state between calls: like any team, a run that ended naturally
    starts afresh, one stopped by its termination condition is resumed by the next call.

    Args:
        team: The team.
        name: The tool's name.
        description: What the team does, for the model.
        return_value_as_last_message: Give the model only the last message of the run.

    Raises:
        TypeError: If ``team`` is not a team.
        ValueError: If ``name`` is empty.
    """

    component_type: ClassVar[str] = "tool"
    component_config_schema: ClassVar[type[BaseModel]] = TeamToolConfig

    def __init__(
        self,
        team: Team,
        name: str,
        description: str,
        *,
        return_value_as_last_message: bool = False,
    ) -> None:
        from ..base import Team

        if not isinstance(team, Team):
            raise AgentToolTypeError(
                f"TeamTool `{name}` needs a team (RoundRobinGroupChat, GraphFlow, ...), not "
                f"{type(team).__name__}; use AgentTool for an agent."
            )
        if not name:
            raise AgentToolValueError("TeamTool needs a non-empty `name`, the tool's name.")
        self._team = team
        super().__init__(
            team, name, description, return_value_as_last_message=return_value_as_last_message
        )

    @property
    def team(self) -> Team:
        """The team."""
        return self._team

    def _to_config(self) -> TeamToolConfig:
        return TeamToolConfig(
            name=self.name,
            description=self.description,
            team=dump_component(self._team),
            return_value_as_last_message=self._return_value_as_last_message,
        )

    @classmethod
    def _from_config(cls, config: TeamToolConfig) -> TeamTool:
        from ..base import Team

        team = _load_runner(config.team, "team", Team, "TeamTool")
        return cls(
            team,
            config.name,
            config.description,
            return_value_as_last_message=config.return_value_as_last_message,
        )


class AgentToolTypeError(FlowlibError, TypeError):
    """``AgentTool``/``TeamTool`` was given something that is not an agent/team."""


class AgentToolValueError(FlowlibError, ValueError):
    """``TeamTool`` was given an invalid argument."""


register_builtin(AgentTool, autogen="autogen_agentchat.tools")
register_builtin(TeamTool, autogen="autogen_agentchat.tools")
