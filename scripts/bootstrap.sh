#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian-like machine (Python 3.10+):
# Graphviz, PostgreSQL, Redis and Chromium (apt), Node.js with the npm packages of
# tests/js, a virtualenv in .venv, and flowlib with its dev and docs extras.
# scripts/test.sh runs it first; scripts/demo.sh needs much less and does not.
# Safe to run again: it skips what is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_setup.sh
need_python
need_venv
# flowlib with its extras installs beside the system packages below (network and disk
# bound, both of them); its failure fails the set-up at the end.
pip_install_once .flowlib-installed ".[dev,docs,studio]" --uv &
python_setup=$!
need_graphviz

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

wait "$python_setup"
