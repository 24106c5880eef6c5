"""The ``flowlib`` command line: render, validate and run flows, and the demo.

One module a command family: ``_main`` (the parser and ``render``/``validate``/``run``/
``demo``), ``_check`` (``check``), ``_batch`` (``batch``), ``_runs`` (``runs`` and the
``--store`` options), with ``_common`` (loading ``FILE.py:OBJECT``, exit codes) and
``_errors`` (one-line errors) under them; ``demo`` is the flow ``flowlib demo`` runs
(the studio opens it too).
"""

from ._common import CliError, ExitCode, load_object
from ._main import main

__all__ = ["CliError", "ExitCode", "load_object", "main"]
