#!/usr/bin/env bash
# Set up (see bootstrap.sh) and run the demo. Offline on a scripted model by default;
# set OPENAI_API_KEY (and optionally OPENAI_BASE_URL, FLOWLIB_MODEL) for a real model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/flowlib demo "$@"
