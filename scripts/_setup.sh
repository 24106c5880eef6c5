# Shared by demo.sh and bootstrap.sh (sourced, not run): find Python 3.10+, install Debian
# packages when missing, make the virtualenv .venv and install flowlib into it once.
# Every step checks first, so running a script again costs nothing.

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: please install $* with your package manager" >&2
    return 1
  fi
  [ -n "${_APT_UPDATED:-}" ] || { as_root apt-get update -qq; _APT_UPDATED=1; }
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

need_python() {
  PYTHON=${PYTHON:-python3}
  if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    echo "setup: flowlib needs Python 3.10 or newer ($PYTHON is $("$PYTHON" -V 2>&1))" >&2
    exit 1
  fi
}

need_graphviz() { command -v dot >/dev/null 2>&1 || apt_install graphviz; }

need_venv() {
  if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv 2>/dev/null || { apt_install python3-venv && "$PYTHON" -m venv .venv; }
  fi
}

# pip_install_once STAMP SPEC [--uv]: install SPEC (e.g. ".[dev,docs]") editable unless
# STAMP is newer than pyproject.toml. No byte-compiling at install time: Python compiles
# what it imports, and the demo imports a small part of what it installs. With --uv (the
# test set-up: every extra, about 150 packages) pip first installs uv into the venv and uv
# installs SPEC: the same packages, resolved the same way (newest allowed), in about a
# tenth of pip's time; where uv cannot be installed or fails, pip does it all.
pip_install_once() {
  local stamp=".venv/$1" spec=$2 pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    # uv trusts the system's certificates, as pip does here (a network whose TLS goes
    # through a proxy of its own); any failure of uv's falls back to pip.
    if [ "${3:-}" = --uv ] && "${pip[@]}" uv \
      && UV_SYSTEM_CERTS=1 .venv/bin/uv pip install -q --python .venv/bin/python -e "$spec"; then
      :
    else
      "${pip[@]}" --no-compile -e "$spec"
    fi
    touch "$stamp"
  fi
}
