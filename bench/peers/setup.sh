#!/usr/bin/env bash
# Makes the peers' virtualenvs for bench/peers/run.py, outside the repository:
#   $FLOWSERVE_PEERS_VENVS/mlserver  MLServer 1.7.1 (any Python >= 3.9; this one by default)
#   $FLOWSERVE_PEERS_VENVS/pytriton  nvidia-pytriton (Triton 2.51) on Python 3.12: its python
#                                    backend stub is built against libpython3.12.so
# FLOWSERVE_PEERS_VENVS defaults to /work/venvs. PYTHON312 names the Python 3.12 to use
# (default: python3.12 on PATH, else pyenv's 3.12.x). Re-running it updates both in place.
#
# uvloop is pinned below 0.22: with 0.22, MLServer 1.7.1's inference-pool workers die at start
# ("There is no current event loop in thread 'MainThread'", SeldonIO/MLServer#2286), so every
# run with parallel_workers >= 1 (MLServer's default) fails.
set -euo pipefail

root="${FLOWSERVE_PEERS_VENVS:-/work/venvs}"
python="${PYTHON:-python3}"
mkdir -p "$root"

echo "== MLServer in $root/mlserver"
"$python" -m venv "$root/mlserver"
"$root/mlserver/bin/pip" install -q --upgrade pip
"$root/mlserver/bin/pip" install -q "mlserver==1.7.1" "uvloop<0.22" numpy

# The first candidate that really is a Python 3.12 (a pyenv shim on PATH may not be).
py312=""
for cand in "${PYTHON312:-}" "$(command -v python3.12 || true)" \
    $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 2>/dev/null | sort -r); do
    if [ -n "$cand" ] && "$cand" -c 'import sys; assert sys.version_info[:2] == (3, 12)' \
        >/dev/null 2>&1; then
        py312="$cand"
        break
    fi
done
if [ -z "$py312" ]; then
    echo "no Python 3.12 found (set PYTHON312=/path/to/python3.12); PyTriton not set up" >&2
    exit 1
fi
echo "== PyTriton in $root/pytriton (Python: $py312)"
"$py312" -m venv "$root/pytriton"
"$root/pytriton/bin/pip" install -q --upgrade pip
"$root/pytriton/bin/pip" install -q nvidia-pytriton numpy
lib="$("$py312" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
if ! ls "$lib"/libpython3.12.so* >/dev/null 2>&1; then
    echo "warning: $lib has no libpython3.12.so; Triton's python backend stub will not start" \
        "(build that Python with --enable-shared)" >&2
fi
echo "done: python bench/peers/run.py --peers mlserver,pytriton"
