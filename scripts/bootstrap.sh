#!/usr/bin/env bash
# Set up everything flowlib needs on a fresh Debian-like machine (Python 3.10+):
# Graphviz's `dot` (apt), a virtualenv in .venv, and flowlib with its dev and docs extras.
# Safe to run again: it skips what is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: please install $* with your package manager" >&2
    return 1
  fi
  [ -n "${_APT_UPDATED:-}" ] || { as_root apt-get update -qq; _APT_UPDATED=1; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "bootstrap: flowlib needs Python 3.10 or newer ($PYTHON is $("$PYTHON" -V 2>&1))" >&2
  exit 1
fi

command -v dot >/dev/null 2>&1 || apt_install graphviz

# PostgreSQL server binaries: the checkpoint-store tests start a throwaway server.
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
  || apt_install postgresql
# redis-server: the tests start one (on a temp dir and a free port) for RedisStore.
command -v redis-server >/dev/null 2>&1 || apt_install redis-server
# Chromium (headless): the run-page tests open the page, move its slider, take a screenshot.
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
  || apt_install chromium

# Test-only JavaScript tools: npm's mermaid under jsdom checks the Mermaid drawings
# (tests/render/test_render_hostile.py). Node.js itself is needed only for this.
command -v npm >/dev/null 2>&1 || apt_install nodejs npm
[ -d tests/js/node_modules/mermaid ] || npm ci --prefix tests/js --no-audit --no-fund --silent

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv 2>/dev/null || { apt_install python3-venv && "$PYTHON" -m venv .venv; }
fi

stamp=.venv/.flowlib-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev,docs]"
  touch "$stamp"
fi
