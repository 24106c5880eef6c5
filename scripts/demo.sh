#!/usr/bin/env bash
# Run the demo with only what it needs: Graphviz's `dot` (apt, when missing), the
# virtualenv .venv and flowlib with its core dependencies (no test or docs tools, no
# database servers, no browser). Safe to run again: set-up steps that are done are skipped.
# Offline on scripted models by default; set OPENAI_API_KEY (or OPENAI_BASE_URL, and
# FLOWLIB_MODEL) for a real model. Arguments go to `flowlib demo` (e.g. --task "...").
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_setup.sh
need_python
need_graphviz
need_venv
# The test set-up (bootstrap.sh) installs a superset: its stamp counts too.
[ -f .venv/.flowlib-installed ] && [ ! pyproject.toml -nt .venv/.flowlib-installed ] \
  || pip_install_once .flowlib-core "."
exec .venv/bin/flowlib demo "$@"
