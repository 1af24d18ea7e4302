#!/usr/bin/env bash
# Fills .whl/ (ignored by git: add `/.whl/` and `/.gpubin/` to .git/info/exclude) with the
# cp312 manylinux wheels that bench/device/run.sh installs on the lent GPU machine, which has
# no network: this environment's pinned versions of the packages the machine's image lacks
# (or has at versions our generated protobuf code or tests do not accept). Also copies wrk
# and its libluajit into .gpubin/ for `run.sh workers`.
#
#   bash bench/device/wheels.sh [PYTHON]    (PYTHON: the interpreter whose versions to pin)
#
# The image already holds the heavy packages left out (onnx, onnxruntime, tensorboard,
# hypothesis, cupy), so the wheels stay under the device tool's 64 MiB working-tree limit
# (about 36 MiB).
set -eu
cd "$(dirname "$0")/../.."
PY=${1:-python3}
# Test-only tools that the GPU runs do not use, or that the image has: left out.
skip='^(ruff|onnx|onnxruntime|tensorboard|tensorboard-data-server|absl-py|markdown|werkzeug|pillow|flatbuffers|ml[-_]dtypes|markupsafe|hypothesis|sortedcontainers|requests|charset[-_]normalizer|certifi|pygments|pyyaml|kubernetes[-_]validate|selenium|uvloop|trio|trio[-_]websocket|outcome|wsproto|websocket[-_]client|pysocks|h11|sniffio)=='
pins=$("$PY" -m pip freeze --exclude-editable | grep -v '^#' | grep -viE "$skip")
mkdir -p .whl .gpubin
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp -d .whl \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 \
    --platform manylinux_2_34_x86_64 --platform manylinux1_x86_64 $pins
if command -v wrk >/dev/null; then
    cp "$(command -v wrk)" .gpubin/
    lib=$(ldd "$(command -v wrk)" | awk '/libluajit/ {print $3}')
    [ -n "$lib" ] && cp -L "$lib" .gpubin/
fi
du -sh .whl .gpubin
