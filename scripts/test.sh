#!/usr/bin/env bash
# Set up everything the tests need (bootstrap.sh), then lint, type-check, build the docs
# (--strict) and run the whole test suite.
# Extra arguments go to pytest. "No tests collected" counts as a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check flowlib tests examples bench
.venv/bin/ruff format --check flowlib tests examples bench
.venv/bin/mypy --strict flowlib
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$(mktemp -d)"
# A plain `pip install .` and the lowest declared versions run the public-API smoke tests.
bash scripts/packaging_check.sh
status=0
# Plain `pytest` skips tests marked slow; the full command runs them too.
.venv/bin/python -m pytest -m "slow or not slow" "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure for flowlib" >&2
  exit 1
fi
exit "$status"
