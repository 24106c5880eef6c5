"""The demo flow (``flowlib demo``) on a checkpoint store, for the studio.

``flowlib studio --store sqlite:///runs.db flowlib.studio.demo:build`` serves a studio
that can start, resume and fork the demo's runs (offline on scripted models unless
``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set, as ``flowlib demo``).
"""

from __future__ import annotations

from ..checkpoint import CheckpointStore
from ..conditions import MaxMessageTermination
from ..teams import GraphFlow

__all__ = ["build"]


def build(checkpoint_store: CheckpointStore | None = None) -> GraphFlow:
    """The demo team, checkpointed to ``checkpoint_store``."""
    from ..cli.demo import build_demo_flow, demo_model_clients

    clients, _ = demo_model_clients()
    flow = build_demo_flow(clients)
    return GraphFlow(
        flow.participants,  # type: ignore[arg-type]  # the demo's own nodes, as built
        flow.graph,
        termination_condition=MaxMessageTermination(20),
        checkpoint_store=checkpoint_store,
    )
