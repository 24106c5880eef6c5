"""Registry entries for the ecosystem components (workbenches, agent and team tools,
extra cache stores), added to flowlib's component registry with the built-ins."""

from __future__ import annotations

from ..component._registry import ComponentSpec, _protocol_spec

__all__ = ["eco_specs"]


def eco_specs() -> list[ComponentSpec]:
    """The specs of the classes that implement ``_to_config`` / ``_from_config``."""
    from ..messages import StructuredMessageFactory
    from ..models._cache_stores import DiskCacheStore, RedisStore
    from ._agent_tool import AgentTool, TeamTool
    from .mcp import McpWorkbench

    entries: list[tuple[type, str, tuple[str, ...]]] = [
        (McpWorkbench, "flowlib.tools.mcp.McpWorkbench", ("autogen_ext.tools.mcp.McpWorkbench",)),
        (AgentTool, "flowlib.tools.AgentTool", ("autogen_agentchat.tools.AgentTool",)),
        (TeamTool, "flowlib.tools.TeamTool", ("autogen_agentchat.tools.TeamTool",)),
        (
            DiskCacheStore,
            "flowlib.models.DiskCacheStore",
            ("autogen_ext.cache_store.diskcache.DiskCacheStore",),
        ),
        (RedisStore, "flowlib.models.RedisStore", ("autogen_ext.cache_store.redis.RedisStore",)),
        (
            StructuredMessageFactory,
            "flowlib.messages.StructuredMessageFactory",
            ("autogen_agentchat.messages.StructuredMessageFactory",),
        ),
    ]
    return [
        _protocol_spec(cls, provider=provider, aliases=(*aliases, cls.__name__))
        for cls, provider, aliases in entries
    ]
