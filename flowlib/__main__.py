"""``python -m flowlib`` is the ``flowlib`` command."""

from .cli import main

raise SystemExit(main())
