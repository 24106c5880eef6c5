"""The one exception tree of flowlib.



    FlowlibError
    ├── GraphError (also ValueError)            build time: the graph or team is malformed
    │   ├── EmptyGraphError
    │   ├── DuplicateNodeError
    │   ├── UnknownNodeError                    an edge, entry point or participant names no node
    │   ├── ParticipantMismatchError            participants and graph nodes differ
    │   ├── NoStartNodeError
    │   ├── UnreachableNodeError
    │   ├── CycleWithoutExitError               a cycle with no conditional edge on it
    │   ├── ActivationConflictError             one activation group, two activation conditions
    │   ├── UnboundedLoopError                  a cyclic team with no termination and no max_turns
    │   └── ConditionSerializationError         a dumped callable condition cannot be loaded back
    ├── StateError (also ValueError)            a saved state does not fit its team
    ├── CheckpointError (also RuntimeError)     a checkpoint store refused a call
    ├── NodeExecutionError (also RuntimeError)  run time: a node raised (`node`, `__cause__`)
    │   └── OrchestratorError (also ValueError) Magentic-One: bad ledger or speaker
    ├── TerminatedException (also RuntimeError) a fired termination condition was reused
    ├── ModelResponseError (also RuntimeError)  a model server's answer is not usable
    ├── RenderError (also RuntimeError)         drawing failed
    │   └── GraphvizNotFoundError               `dot` is not installed (says how to install)
    ├── ComponentSerializationError (ValueError) a component field cannot go into a config
    ├── ComponentLoadError (ValueError)          a config cannot be loaded (`path` says where)
    │   └── UnknownProviderError                 a provider outside flowlib's registry
    └── ConversationError (also RuntimeError)   conversation API misuse
        ├── HumanInputRequiredError             a tool asked a human and no handler is set
        └── TurnCancelledError                  the turn was cancelled

Errors defined next to their subsystem (flowlib.models, flowlib.render,
flowlib.conversation, flowlib.teams) all derive from FlowlibError.

Every message names the offending node or edge in backticks and says how to fix it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ActivationConflictError",
    "ArgumentTypeError",
    "CheckpointError",
    "ConditionSerializationError",
    "CycleWithoutExitError",
    "DuplicateNodeError",
    "EmptyGraphError",
    "FlowlibError",
    "GraphError",
    "InvalidArgumentError",
    "InvalidConditionError",
    "NoStartNodeError",
    "NodeExecutionError",
    "ParticipantMismatchError",
    "StateError",
    "UnboundedLoopError",
    "UnknownNodeError",
    "UnreachableNodeError",
]


class FlowlibError(Exception):
    """Root of every error flowlib raises on purpose."""


class GraphError(FlowlibError, ValueError):
    """A graph or team definition is invalid. Raised at build time, never at first run.

    Attributes:
        nodes: The names of the nodes the error is about, in a stable order.
        edges: The ``(source, target)`` pairs the error is about.
    """

    def __init__(
        self,
        message: str,
        *,
        nodes: Sequence[str] = (),
        edges: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.nodes: tuple[str, ...] = tuple(nodes)
        self.edges: tuple[tuple[str, str], ...] = tuple(edges)


class EmptyGraphError(GraphError):
    """The graph has no nodes."""


class DuplicateNodeError(GraphError):
    """Two nodes (or two participants) share one name."""


class UnknownNodeError(GraphError):
    """An edge, an entry point or a lookup names a node that the graph does not have."""


class ParticipantMismatchError(GraphError):
    """The participants given to a team and the nodes of its graph are not the same set."""


class NoStartNodeError(GraphError):
    """No node can start: every node has an incoming edge and no entry point is set."""


class UnreachableNodeError(GraphError):
    """Some nodes cannot be reached from any start node."""


class CycleWithoutExitError(GraphError):
    """A cycle has no conditional edge on it, so once entered it never ends."""


class ActivationConflictError(GraphError):
    """Edges of one activation group ask for different activation conditions."""


class UnboundedLoopError(GraphError):
    """A team whose graph loops has neither a termination condition nor ``max_turns``."""


class ConditionSerializationError(GraphError):
    """A dumped graph holds a callable condition that cannot be restored without the callable."""


class StateError(FlowlibError, ValueError):
    """A saved state cannot be loaded: wrong version, wrong team, or unknown nodes."""


class CheckpointError(FlowlibError, RuntimeError):
    """A checkpoint store refused a call: unknown run, a record out of order (two writers
    on one run), or a closed store. The store is unchanged."""


class NodeExecutionError(FlowlibError, RuntimeError):
    """A node raised while it ran. The original exception is ``__cause__``.

    The team keeps its state: the failed node is put back at the front of the ready set,
    so ``run()`` with no task retries it once the cause is fixed.

    Attributes:
        node: The name of the node that failed.
    """

    def __init__(self, node: str, cause: BaseException, *, during: str | None = None) -> None:
        where = f" in {during}" if during else ""
        super().__init__(
            f"Node `{node}` raised {type(cause).__name__}{where}: {cause}. "
            "The team kept its state; fix the cause and call `run()` with no task to retry "
            "the node, or `reset()` to start over."
        )
        self.node = node
        self.__cause__ = cause


class CheckpointArgumentError(CheckpointError, ValueError):
    """A checkpoint store or store URL was given a bad argument (a negative
    ``keep_last``, a URL with an unknown scheme). Nothing was changed."""


__all__ += ["CheckpointArgumentError"]

# --- Argument checks (harden) -------------------------------------------------------------


class InvalidArgumentError(FlowlibError, ValueError):
    """An argument has the right type but a value flowlib cannot use.

    Attributes:
        argument: The name of the offending argument (``"participants[0]"``, ``"task"``).
    """

    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


class ArgumentTypeError(FlowlibError, TypeError):
    """An argument is of a type flowlib does not accept (``except TypeError`` catches it).

    Attributes:
        argument: The name of the offending argument.
    """

    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


class InvalidConditionError(GraphError):
    """An edge condition cannot work: an ``async`` callable, or a regex that does not compile."""


# --- eco: MCP servers -----------------------------------------------------------------


class McpServerError(FlowlibError, RuntimeError):
    """An MCP server could not be started or reached, answered a request with a protocol
    error, or died during a request. The message names the server and the request."""


__all__ += ["McpServerError"]


# --- structure: one error tree (issue 9.7) ----------------------------------------------


class TeamRunningError(FlowlibError, RuntimeError):
    """A team (or conversation) was asked to run, reset or load state while a run of it is
    still going. Wait for the running call to finish, or cancel it, then call again.
    ``except RuntimeError`` still catches it."""


__all__ += ["TeamRunningError"]
