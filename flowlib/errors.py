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
    │   ├── ConditionSerializationError         a dumped callable condition cannot be loaded back
    │   ├── InvalidConditionError               an async callable, a regex that does not compile
    │   ├── GraphWarningError                   `validate --strict`: a static warning
    │   ├── MapEdgeConflictError                a map edge's target is also reached otherwise
    │   └── GraphLoadError                      DiGraph.load was given something not dumped
    ├── StateError (also ValueError)            a saved state does not fit its team
    ├── CheckpointError (also RuntimeError)     a checkpoint store refused a call
    │   ├── CheckpointArgumentError (ValueError) a bad argument to a store; nothing changed
    │   ├── CheckpointConflictError             not the run's next checkpoint (another writer)
    │   │   └── RunLeaseError                   another executor holds the run's lease
    │   └── RunLookupError                      an entry point does not fit the stored run
    │       ├── RunNotFoundError (LookupError)  resume/continue/fork of an id the store lacks
    │       ├── RunExistsError                  start() of an id the store already has
    │       ├── RunStatusError                  e.g. continue_run() of an interrupted run
    │       └── HumanRequestError               an answer to no pending request, or twice
    │           └── RequestAlreadyAnsweredError the request was answered already
    ├── NodeExecutionError (also RuntimeError)  run time: a node raised (`node`, `__cause__`)
    │   └── OrchestratorError (also ValueError) Magentic-One: bad ledger or speaker
    ├── NodeTimeoutError (also TimeoutError)    a node's turn passed its deadline (a cause)
    ├── TeamRunningError (RuntimeError, ValueError) run/reset/load_state while a run is going
    ├── InvalidValueError (also ValueError)     a value flowlib cannot use
    │   └── InvalidArgumentError                an argument's value, named in `argument`
    │       └── InvalidArgumentTypeError        a wrong type where AutoGen raises ValueError
    ├── InvalidTypeError (also TypeError)       an object of the wrong type
    │   └── ArgumentTypeError                   an argument's type, named in `argument`
    ├── UnknownMessageTypeError (ValueError)    a message class the team does not know
    ├── ContractError (also RuntimeError)       a participant, model or callback broke a contract
    │   └── AgentError                          an agent could not finish its turn (`agent`)
    ├── TerminatedException (also RuntimeError) a fired termination condition was reused
    ├── ModelResponseError (also RuntimeError)  a model server's answer is not usable
    ├── McpServerError (also RuntimeError)      an MCP server failed
    ├── ClientNotProvidedError (ImportError)   a model client of AutoGen's flowlib has not
    │                                           (says which flowlib client to use instead)
    ├── RenderError (also RuntimeError)         drawing failed
    │   └── GraphvizNotFoundError               `dot` is not installed (says how to install)
    ├── ComponentSerializationError (ValueError) a component field cannot go into a config
    ├── ComponentLoadError (ValueError)          a config cannot be loaded (`path` says where)
    │   └── UnknownProviderError                 a provider outside flowlib's registry
    ├── ReplayExhaustedError (also ValueError)  a replay client ran out of responses
    ├── ScriptExhaustedError (also RuntimeError) a scripted test agent ran out of replies
    ├── TraceCheckError (also AssertionError)   a run's trace breaks the execution rules
    ├── FlowUnsoundError (also AssertionError)  `assert_flow_sound` found a broken rule
    ├── RunFailedError (also RuntimeError)      one run of a batch failed (returned, not raised)
    ├── RayClusterError (also RuntimeError)     a Ray cluster cannot run the batch
    │   ├── RayConnectionError (InvalidArgumentError) nothing answers at the address
    │   └── RayWorkersError                     workers cannot be placed, or never become ready
    ├── CliError                                a command-line failure (exit code `code`)
    └── ConversationError (also RuntimeError)   conversation API misuse
        ├── HumanInputRequiredError             a tool asked a human and no handler is set
        └── TurnCancelledError                  the turn was cancelled

Errors defined next to their subsystem (flowlib.models, flowlib.render,
flowlib.conversation, flowlib.teams, flowlib.component, flowlib.testing, flowlib.cli) all
derive from FlowlibError; each is also the built-in type (``ValueError``,
``TypeError``, ``RuntimeError``) older code may catch.

Every message names the offending node or edge in backticks and says how to fix it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._english import clause

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
            f"Node `{node}` raised {type(cause).__name__}{where}: {clause(cause)}. "
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


class InvalidValueError(FlowlibError, ValueError):
    """A value flowlib cannot use: bad input to a constructor or a call, a malformed
    message, a model answer that does not parse. ``except ValueError`` still catches it.
    The message names the offending argument, node or field and says how to fix it."""


class InvalidTypeError(FlowlibError, TypeError):
    """An object of a type flowlib does not accept. ``except TypeError`` still catches it."""


class ContractError(FlowlibError, RuntimeError):
    """A participant, router, model client or callback broke the contract flowlib relies on
    (a stream that ended without its final result, an input function that returned no
    string), or a helper was called outside the context it works in.
    ``except RuntimeError`` still catches it."""


__all__ += ["ContractError", "InvalidTypeError", "InvalidValueError"]


class InvalidArgumentError(InvalidValueError):
    """An argument has the right type but a value flowlib cannot use.

    Attributes:
        argument: The name of the offending argument (``"participants[0]"``, ``"task"``).
    """

    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(message)
        self.argument = argument


class ArgumentTypeError(InvalidTypeError):
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


class TeamRunningError(FlowlibError, RuntimeError, ValueError):
    """A team (or conversation) was asked to run, reset or load state while a run of it is
    still going. Wait for the running call to finish, or cancel it, then call again.
    AutoGen raises ``ValueError`` for a second run and ``RuntimeError`` for the others;
    this class is both, so ported ``except`` clauses still catch it."""


__all__ += ["TeamRunningError"]


# --- check: property-testing a user's flow ------------------------------------------------


class FlowUnsoundError(FlowlibError, AssertionError):
    """[`assert_flow_sound`][flowlib.testing.assert_flow_sound] found a way the flow can go
    wrong (a join that never completes, a dead end, a runaway loop, ...).

    Attributes:
        report: The exploration report (an [`ExploreReport`][flowlib.testing.ExploreReport]);
            its findings carry the shrunk counterexamples.
    """

    def __init__(self, message: str, *, report: object) -> None:
        super().__init__(message)
        self.report = report


class GraphWarningError(GraphError):
    """A static warning of [`graph_warnings`][flowlib.graph.graph_warnings] treated as an
    error (``flowlib validate --strict``)."""


__all__ += ["FlowUnsoundError", "GraphWarningError"]
# --- compat: the built-in types AutoGen raises ------------------------------------------


class InvalidArgumentTypeError(ArgumentTypeError, InvalidArgumentError):
    """An argument of the wrong type, where AutoGen raises ``ValueError`` for the same
    check: both ``except TypeError`` and ``except ValueError`` catch it.

    Attributes:
        argument: The name of the offending argument.
    """

    def __init__(self, message: str, *, argument: str) -> None:
        # Both bases take `argument`; initialise the exception once, not through each.
        Exception.__init__(self, message)
        self.argument = argument


class UnknownMessageTypeError(FlowlibError, ValueError):
    """A task or an agent produced a message whose class the team does not know; register
    it through the team's ``custom_message_types``.

    Attributes:
        message_type: The unknown class.
    """

    def __init__(self, message: str, *, message_type: type) -> None:
        super().__init__(message)
        self.message_type = message_type


class AgentError(ContractError):
    """An agent could not finish its turn for a reason of its own making: its input
    function failed or returned a non-string, or its stream ended without a Response.

    Attributes:
        agent: The agent's name (None where no agent is known, e.g. a call made outside
            any agent's turn).
    """

    def __init__(self, message: str, *, agent: str | None = None) -> None:
        super().__init__(message)
        self.agent = agent


__all__ += [
    "AgentError",
    "InvalidArgumentTypeError",
    "UnknownMessageTypeError",
]
# --- harden: loading dumped graphs ------------------------------------------------------


class GraphLoadError(GraphError):
    """Data given to ``DiGraph.load`` is not a dumped graph: the message lists where
    (``nodes.a.edges.0.target``) and what is wrong."""


__all__ += ["GraphLoadError"]
# --- ray: batches of runs (flowlib.batch, flowlib.distributed) ---------------------------


class RunFailedError(FlowlibError, RuntimeError):
    """One run of a batch failed for its own reason (an agent raised), or its worker died
    more often than the runner retries. Batch runners return it in the run's place
    instead of raising, so one bad task does not stop the others.

    The original exception may not survive the trip from a worker, so its type name,
    message and formatted traceback are kept as text.

    Attributes:
        run_id: The run that failed.
        error_type: The original exception's class name (``"WorkerDied"`` when the
            worker process died on every try).
        error_message: The original exception's message.
        partial_result: What the run produced before it failed (a ``TaskResult``).
        traceback: The original traceback, formatted (empty if unknown).
    """

    def __init__(
        self,
        run_id: str,
        error_type: str,
        error_message: str,
        *,
        partial_result: object = None,
        traceback: str = "",
    ) -> None:
        super().__init__(
            f"Run `{run_id}` failed: {error_type}: {error_message}. Its checkpoints are "
            "kept: run the batch again to resume it once the cause is fixed."
        )
        self.run_id = run_id
        self.error_type = error_type
        self.error_message = error_message
        self.partial_result = partial_result
        self.traceback = traceback

    def __reduce__(self) -> tuple[object, ...]:
        # Crosses process boundaries (Ray): rebuild from the fields, not from `args`.
        return (
            _rebuild_run_failed,
            (
                self.run_id,
                self.error_type,
                self.error_message,
                self.partial_result,
                self.traceback,
            ),
        )


def _rebuild_run_failed(
    run_id: str, error_type: str, error_message: str, partial_result: object, traceback: str
) -> RunFailedError:
    return RunFailedError(
        run_id, error_type, error_message, partial_result=partial_result, traceback=traceback
    )


class MissingExtraError(FlowlibError, ImportError):
    """A feature needs an optional dependency that is not installed. The message names the
    extra that brings it (``pip install 'flowlib[postgres]'``); ``except ImportError``
    still catches it."""


class RayNotInstalledError(MissingExtraError):
    """``flowlib.distributed`` was imported but Ray is not installed."""


class RayClusterError(FlowlibError, RuntimeError):
    """The Ray cluster cannot run a batch: nothing answers at its address, it cannot place
    the workers asked for, or a worker did not become ready in time. Raised by
    [`RayRunner`][flowlib.distributed.RayRunner] within a bounded time instead of waiting
    forever."""


class RayConnectionError(RayClusterError, InvalidArgumentError):
    """Nothing answers at a Ray address (``argument`` is ``"address"``).
    ``except InvalidArgumentError`` still catches it."""


class RayWorkersError(RayClusterError):
    """The cluster cannot place the workers asked for (more workers, CPUs, GPUs or custom
    resources than it has), or a worker did not become ready within ``ready_timeout``."""


__all__ += [
    "MissingExtraError",
    "RayClusterError",
    "RayConnectionError",
    "RayNotInstalledError",
    "RayWorkersError",
    "RunFailedError",
]


class RoutingError(ContractError, ValueError):
    """A router selected a node that is not one of its edge targets (raised inside its
    turn, so the run raises it as the cause of a ``NodeExecutionError``).
    ``except ValueError`` still catches it."""


__all__ += ["RoutingError"]


class CheckpointConflictError(CheckpointError):
    """A store refused an append because the record is not the run's next checkpoint
    (another writer advanced the run, or a record was skipped). Unlike other
    ``CheckpointError``s it is unambiguous: the record was certainly not written."""


__all__ += ["CheckpointConflictError"]


# --- engine: node policies (issue 23) and the team per-turn deadline (issue 21.4) --------


class NodeTimeoutError(FlowlibError, TimeoutError):
    """A node's turn ran past its deadline (``add_node(..., timeout=)`` or a team's
    ``turn_timeout=``) and was cancelled. A run raises it as the ``__cause__`` of a
    [`NodeExecutionError`][flowlib.errors.NodeExecutionError] once no retry is left; the
    node stays at the front of the ready set, so the run can be resumed.

    Attributes:
        node: The node whose turn timed out.
        timeout: The deadline in seconds.
    """

    def __init__(self, node: str, timeout: float) -> None:
        super().__init__(
            f"Node `{node}`'s turn ran past its {timeout:g} s deadline and was cancelled; "
            "raise `timeout=` on the node (or `turn_timeout=` on the team) if the work is "
            "just slow, then resume the run"
        )
        self.node = node
        self.timeout = timeout


__all__ += ["NodeTimeoutError"]


class MapEdgeConflictError(GraphError):
    """A map edge's target is also the target of another edge (or of a second map edge),
    or a map edge is drawn where instances cannot run (a self-loop, a router): the
    target's join would be ambiguous. See docs/graph-semantics.md, "Map edges"."""


__all__ += ["MapEdgeConflictError"]


class RunLeaseError(CheckpointConflictError):
    """Another executor holds the run's lease (or this one lost it after it expired),
    so this one may not execute the run or write its checkpoints. Nothing was written.

    Attributes:
        run_id: The run.
        holder: The owner holding the lease (None: nobody holds it any more).
        expires_at: Unix time the holder's lease expires (None: nobody holds it).
    """

    def __init__(
        self,
        message: str,
        *,
        run_id: str = "",
        holder: str | None = None,
        expires_at: float | None = None,
    ) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.holder = holder
        self.expires_at = expires_at


__all__ += ["RunLeaseError"]


class RunLookupError(CheckpointError, ValueError):
    """An explicit run entry point (``start``, ``resume``, ``continue_run``, ``fork``,
    ``answer``) does not fit what the store holds of the run. Nothing was created and no
    model or tool was called.

    Attributes:
        run_id: The run.
    """

    def __init__(self, message: str, *, run_id: str = "") -> None:
        super().__init__(message)
        self.run_id = run_id


class RunNotFoundError(RunLookupError, LookupError):
    """The store has no run with this id (``resume``, ``continue_run``, ``fork``, or
    ``run(run_id=...)`` with no task)."""


class RunExistsError(RunLookupError):
    """``start`` was given an id the store already holds a run under."""


class RunStatusError(RunLookupError):
    """The run's status does not allow this entry point (e.g. ``continue_run`` of an
    interrupted run: resume it first).

    Attributes:
        status: The run's phase (see ``flowlib.teams.RunPhase``).
    """

    def __init__(self, message: str, *, run_id: str = "", status: str = "") -> None:
        super().__init__(message, run_id=run_id)
        self.status = status


class HumanRequestError(RunLookupError):
    """An answer names a request the run is not waiting for.

    Attributes:
        request_id: The request the answer named.
    """

    def __init__(self, message: str, *, run_id: str = "", request_id: str = "") -> None:
        super().__init__(message, run_id=run_id)
        self.request_id = request_id


class RequestAlreadyAnsweredError(HumanRequestError):
    """The request was answered already; the second answer was refused and ran nothing."""


__all__ += [
    "HumanRequestError",
    "RequestAlreadyAnsweredError",
    "RunExistsError",
    "RunLookupError",
    "RunNotFoundError",
    "RunStatusError",
]


class ClientNotProvidedError(FlowlibError, ImportError):
    """A model client AutoGen's documents name that flowlib does not provide
    (``AzureAIChatCompletionClient``, ``SKChatCompletionAdapter``,
    ``AnthropicChatCompletionClient``, ...), imported from ``flowlib.models``. The
    message says what to use instead; ``name`` is the client's name.
    ``except ImportError`` still catches it."""


__all__ += ["ClientNotProvidedError"]
