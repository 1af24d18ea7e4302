#!/usr/bin/env bash
# Runs the GPU checks and benchmarks on a lent GPU machine, in one call per list of phases.
#
#   bash bench/device/run.sh PHASE...    (from the repository root)
#
# Phases: probe, gputests, suite (pytest arguments in SUITE_ARGS), overhead, sweep, profile
# (PROFILE=cnn:64), serve, workers (WORKERS="4 8 12"), twocores (the 2-core development
# machine's request-path and batching benches, pinned to CPUs 0-1 of this quiet one).
# The machine has no network: Python packages its image lacks travel as wheels in .whl/ (made
# by bench/device/wheels.sh; see bench/README.md, "GPU"), installed with --target into /tmp/site; the repository goes on
# PYTHONPATH, and a `flowserve` script is written next to the interpreter for the tests that
# start the CLI. Logs and JSON go to $OUT (the device tool brings them back).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

setup() {
    if [ -d .whl ] && [ ! -f /tmp/site/.done ]; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl || exit 1
        touch /tmp/site/.done
    fi
    export PYTHONPATH=/tmp/site:$PWD
    # The carried numpy matches CI's; if the image's cupy cannot work with it, use the image's.
    if ! "$PY" -c "import cupy, numpy; assert int(cupy.arange(4).sum()) == 6" 2>/dev/null; then
        echo "carried numpy does not work with the image's cupy; using the image's numpy"
        rm -rf /tmp/site/numpy /tmp/site/numpy-* /tmp/site/numpy.libs
    fi
    local bindir
    bindir=$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")
    for entry in "flowserve service.cli" "flowserve-tfserving service.tfserving_cli"; do
        set -- $entry
        printf '#!%s\nimport sys\nfrom %s import main\nsys.exit(main())\n' \
            "$bindir/python3" "$2" >"$bindir/$1"
        chmod +x "$bindir/$1"
    done
    if [ -x .gpubin/wrk ]; then
        export PATH=$PWD/.gpubin:$PATH LD_LIBRARY_PATH=$PWD/.gpubin:${LD_LIBRARY_PATH:-}
    fi
}

probe() {
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
    nproc
    "$PY" - <<'EOF'
import platform, numpy, cupy
print("python", platform.python_version(), "numpy", numpy.__version__, "cupy", cupy.__version__)
print("cuda runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion())
p = cupy.cuda.runtime.getDeviceProperties(0)
print("device", p["name"], "SMs", p["multiProcessorCount"], "L2", p["l2CacheSize"])
EOF
}

gputests() {
    FLOWSERVE_TEST_DEVICE=gpu "$PY" -m pytest tests/engine/test_gpu.py -rA -q 2>&1 \
        | tee "$OUT/gputests.log" | tail -40
}

suite() {
    # The whole suite with every session placing ops on GPU:0 by default.
    FLOWSERVE_TEST_DEVICE=gpu timeout "${SUITE_TIMEOUT:-420}" "$PY" -m pytest \
        -n "${SUITE_WORKERS:-12}" -q -rfE --timeout 180 --junitxml "$OUT/suite.xml" \
        ${SUITE_ARGS:-} 2>&1 | tee "$OUT/suite.log" | tail -60
}

overhead() {
    "$PY" bench/engine_overhead.py --device gpu --json "$OUT/overhead.json" 2>&1 \
        | tee "$OUT/overhead.log" | tail -20
}

sweep() {
    timeout 240 "$PY" bench/gpu_sweep.py --json "$OUT/sweep.json" 2>&1 \
        | tee "$OUT/sweep.log" | tail -30
}

profile() {
    "$PY" bench/gpu_sweep.py --profile "${PROFILE:-cnn:64}" 2>&1 | tee "$OUT/profile.log" | tail -45
}

serve() {
    timeout 200 "$PY" bench/load.py scenario batching --duration "${SERVE_DURATION:-5}" \
        --device gpu --json "$OUT/serve.json" 2>&1 | tee "$OUT/serve.log" | tail -30
}

workers() {
    # --workers N against 1 worker, for each N in WORKERS (default 4 8 12), loaded by wrk
    # with 4 threads (about 30 us of client CPU per request).
    for n in ${WORKERS:-4 8 12}; do
        timeout 200 "$PY" bench/workers.py --workers "$n" --client wrk --clients 4 \
            --concurrency $((16 * n)) --duration "${WORKERS_DURATION:-5}" \
            --json "$OUT/workers$n.json" 2>&1 | tail -8
    done
}

twocores() {
    # The issue-13 figures taken on the 2-core development machine, where other tenants make
    # rounds swing by 10-20%, again here with every process pinned to two CPUs of an
    # otherwise idle machine: throughput and server CPU per request against the aiohttp floor
    # (wrk, 64 clients), CPU per request without sockets, then batching's figures.
    local pin="taskset -c 0,1"
    $pin timeout 240 "$PY" bench/request_path.py --duration "${TWO_DURATION:-3}" --rounds 2 \
        --lane on 2>&1 | tee "$OUT/request_path.log" | tail -20
    $pin timeout 120 "$PY" bench/request_cpu.py --requests 1000 --rounds 3 --clients 16 \
        2>&1 | tee "$OUT/request_cpu.log" | tail -10
    $pin timeout 300 "$PY" bench/batching.py --duration "${TWO_DURATION:-3}" --rounds 2 \
        2>&1 | tee "$OUT/batching.log" | tail -40
}

setup
for phase in "$@"; do
    echo "=== $phase $(date -u +%H:%M:%S)"
    start=$SECONDS
    "$phase"
    echo "=== $phase took $((SECONDS - start)) s"
done
