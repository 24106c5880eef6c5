#!/usr/bin/env bash
# What a user installs is what is tested: the public-API smoke tests
# (tests/packaging/) in two clean virtualenvs beside the dev one:
#   plain   `pip install .` with no extras, today's releases of every dependency;
#   lowest  the same at the lowest version pyproject.toml allows for each dependency.
# Each venv holds flowlib's declared dependencies plus the test runner, nothing else (the
# first smoke test fails if a dev-only package is importable). The venvs live outside the
# checkout, under ~/.cache/flowlib-packaging/<hash of the dependencies>, so a new clone with
# the same dependencies reuses them; flowlib itself is reinstalled from the working tree on
# every run, as a built package, not an editable one.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
RUNNER=("pytest>=8" "pytest-asyncio>=0.24" "pytest-timeout>=2.3")

lowest_pins() {
  # "name>=X" in [project] dependencies -> "name==X"; a dependency without a lower
  # bound is an error here, since its lower end could not be tested.
  "$PYTHON" - <<'PY'
import re, sys
text = open("pyproject.toml").read()
block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
for spec in re.findall(r'"([^"]+)"', block):
    match = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)>=([^,;]+)(,.*)?", spec)
    if not match:
        sys.exit(f"packaging_check: `{spec}` has no lower bound to test")
    print(f"{match[1]}=={match[2]}")
PY
}

CACHE=${FLOWLIB_PACKAGING_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flowlib-packaging}
# Keyed by the declared dependencies and Python's version only: a change to an extra or
# to the tools' settings does not rebuild the venvs.
KEY=$( { "$PYTHON" -V; sed -n '/^dependencies = \[/,/^\]/p' pyproject.toml; } | sha256sum | cut -c1-16)

# flowlib is built into a wheel once per run, and that one wheel goes into both venvs.
WHEELS=$(mktemp -d)
trap 'rm -rf "$WHEELS"' EXIT

prepare() {  # prepare VENV [pins...]
  local venv=$1; shift
  local stamp=$venv/.deps-installed
  if [ ! -f "$stamp" ]; then
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    # The declared dependencies (and, for the lowest run, their pins) with the runner,
    # resolved as pip resolves them (the newest each range allows) by uv where the test
    # set-up installed it (a tenth of pip's time), else by pip itself.
    # (uv trusts the system's certificates, as pip does here; if it fails, pip goes on.)
    if [ -x .venv/bin/uv ] && UV_SYSTEM_CERTS=1 .venv/bin/uv pip install -q \
      --python "$venv/bin/python" "$@" "${RUNNER[@]}" .; then
      :
    else
      "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" "${RUNNER[@]}" .
    fi
    touch "$stamp"
  fi
  if ! compgen -G "$WHEELS/flowlib-*.whl" >/dev/null; then
    "$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WHEELS" .
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
    "$WHEELS"/flowlib-*.whl
  # pip itself checks that what is installed meets every requirement flowlib declares.
  "$venv/bin/python" -m pip check --disable-pip-version-check >/dev/null
}

run_smoke() {  # run_smoke VENV NAME
  # The venv's pytest script (not `python -m pytest`) so the source tree is not on
  # sys.path: flowlib comes from site-packages.
  FLOWLIB_PACKAGING_CHECK=$2 "$1/bin/pytest" tests/packaging -q -p no:cacheprovider -p no:anyio
}

mapfile -t pins < <(lowest_pins)
# Old venvs of other pyproject.toml versions go.
mkdir -p "$CACHE"
find "$CACHE" -mindepth 1 -maxdepth 1 ! -name "$KEY-*" -exec rm -rf {} +
prepare "$CACHE/$KEY-plain"
prepare "$CACHE/$KEY-lowest" "${pins[@]}"
echo "packaging check: plain install"
run_smoke "$CACHE/$KEY-plain" plain
echo "packaging check: lowest versions (${pins[*]})"
run_smoke "$CACHE/$KEY-lowest" lowest
