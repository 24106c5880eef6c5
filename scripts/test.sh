#!/usr/bin/env bash
# Set up everything the tests need (bootstrap.sh), then lint, type-check, run the packaging
# check and the whole test suite (slow tests included; the strict docs build is one of its
# tests, tests/test_docs.py, so the docs are built once). Extra arguments go to pytest.
# "No tests collected" counts as a failure.
#
# Speed (docs/choices.md, "The test command's speed"): the type check and the packaging
# check run beside pytest, which spends part of its time waiting on the processes and
# servers its tests start; pytest itself runs in FLOWLIB_TEST_WORKERS pytest-xdist workers
# (default 3, on any number of cores, for the same reason). Each step's output is printed
# in full and any failing step fails the command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# Compiled files are written and reused (an environment may turn that off): without them
# every pytest worker rewrites and compiles all the test modules again at collection
# (15 s of CPU each) and every Python process compiles flowlib. One collection, beside
# ruff, writes them before the workers start; it runs no test.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m pytest --collect-only -q -p no:cacheprovider >/dev/null 2>&1 &
warm=$!
.venv/bin/ruff check flowlib tests examples bench
.venv/bin/ruff format --check flowlib tests examples bench
wait "$warm" || true  # a collection error shows again, in full, in the run below

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
beside() {  # beside NAME COMMAND...: run COMMAND in the background, output to a log
  local name=$1
  shift
  (
    code=0
    "$@" >"$logs/$name.log" 2>&1 || code=$?
    echo "$code" >"$logs/$name.status"
  ) &
}
# mypy's cache is keyed by each file's content: a new clone reuses a previous run's work.
beside mypy .venv/bin/mypy --strict flowlib \
  --cache-dir "${XDG_CACHE_HOME:-$HOME/.cache}/flowlib-mypy"
# A plain `pip install .` and the lowest declared versions run the public-API smoke tests.
beside packaging bash scripts/packaging_check.sh

status=0
# Plain `pytest` skips tests marked slow; the full command runs them too. The tests over
# 1/16 of their timeout are listed; one over 1/4 fails the command (tests/_budget.py).
.venv/bin/python -m pytest -m "slow or not slow" -n "${FLOWLIB_TEST_WORKERS:-3}" \
  --dist loadgroup --budget-fail 4 "$@" || status=$?
wait
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure for flowlib" >&2
  status=1
fi
for name in mypy packaging; do
  echo "=== $name"
  cat "$logs/$name.log"
  if [ "$(cat "$logs/$name.status")" != 0 ]; then
    echo "test.sh: $name failed" >&2
    status=1
  fi
done
exit "$status"
