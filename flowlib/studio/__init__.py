"""The studio: a local web app to watch, steer and debug the runs of a checkpoint store.

``flowlib studio --store URL [FILE.py:build ...]`` serves it (docs/studio.md). The server
is a Starlette app under uvicorn (the ``flowlib[studio]`` extra); this package imports
them only when serving, so ``flowlib studio`` without them says what to install.
"""

from __future__ import annotations

from ._data import Flow, Studio, StudioError
from ._serve import is_loopback, load_flows, serve

__all__ = ["Flow", "Studio", "StudioError", "is_loopback", "load_flows", "serve"]
