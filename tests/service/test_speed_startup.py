"""Start-up settings that decide the server's speed: the BLAS thread limit and the event loop."""

import json
import subprocess
import sys

import pytest

from service import cli
from service.config import ConfigError, ServerConfig

_CHILD = """
import json, os, sys
import numpy as np  # imported first: the limit must hold anyway
from threadpoolctl import threadpool_info
from service.cli import limit_blas_threads

n = int(sys.argv[1])
before = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
limit_blas_threads(n)
a = np.ones((256, 256))
(a @ a).sum()  # a BLAS call after the limit: it must not reset it
after = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
print(json.dumps({"before": before, "after": after}))
"""


def _child(code: str, n: int) -> tuple[dict, str]:
    """Runs ``code`` with argument ``n`` in a fresh interpreter without any *_NUM_THREADS
    variable: the JSON line it printed last, and its stderr."""
    env_free = {k: v for k, v in __import__("os").environ.items() if "NUM_THREADS" not in k}
    out = subprocess.run(
        [sys.executable, "-c", code, str(n)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env_free,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


@pytest.mark.parametrize("n", [1, 2])
def test_blas_thread_limit_holds_when_numpy_was_imported_first(n):
    pools, stderr = _child(_CHILD, n)
    assert pools["after"], "numpy's BLAS was not found by threadpoolctl"
    assert pools["after"] == [n] * len(pools["after"])
    assert "numpy was imported" not in stderr


_INTRA_CHILD = """
import json, sys
import numpy as np
from threadpoolctl import threadpool_info
from engine.ops import split_product
from service.cli import set_intra_op_threads

import engine as tf

set_intra_op_threads(int(sys.argv[1]))
# A model's session asking for other threads changes nothing: the server reserved its count.
tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=int(sys.argv[1]) + 2))
blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
print(json.dumps({
    "blas": blas, "split": split_product.threads(),
    "engine": tf.config.threading.get_intra_op_parallelism_threads(),
}))
"""


@pytest.mark.parametrize("n", [1, 3])
def test_intra_op_threads_split_products_and_keep_blas_at_one_thread(n):
    """``--intra-op-threads N``: numpy's BLAS runs one thread per call (its own threads stall
    when other work shares the cores) and the engine splits large products N ways."""
    got, stderr = _child(_INTRA_CHILD, n)
    assert got["blas"] and got["blas"] == [1] * len(got["blas"])
    assert got["split"] == n and got["engine"] == n
    assert f"intra_op_parallelism_threads={n + 2} ignored" in stderr


def test_the_server_sets_its_intra_op_threads_before_it_starts(monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "set_intra_op_threads", seen.append)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # the loop choice then fails: exit 2
    assert cli.run_server(ServerConfig(intra_op_threads=3, event_loop="uvloop")) == 2
    assert seen == [3]


def test_event_loop_choice():
    assert ServerConfig().event_loop == "asyncio"  # uvloop measured no faster, worse p99
    assert cli.loop_factory("asyncio") is None
    try:
        import uvloop
    except ImportError:
        assert cli.loop_factory("auto") is None
        with pytest.raises(ConfigError, match="uvloop"):
            cli.loop_factory("uvloop")
    else:
        assert cli.loop_factory("auto") is uvloop.new_event_loop
        assert cli.loop_factory("uvloop") is uvloop.new_event_loop


def test_event_loop_uvloop_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert cli.loop_factory("auto") is None
    with pytest.raises(ConfigError, match=r"flowserve\[fast\]"):
        cli.loop_factory("uvloop")


def test_event_loop_setting_is_validated():
    with pytest.raises(ConfigError, match="event_loop"):
        ServerConfig(event_loop="trio").validate()
    assert cli.main(["--event-loop", "trio"]) == 2


_GC_CHILD = """
import gc, json, sys, weakref
from service.cli import tune_garbage_collector

before = gc.get_threshold()
frozen_before = gc.get_freeze_count()  # 0, unless the interpreter's site hooks froze some
tune_garbage_collector(int(sys.argv[1]))

class Node:
    pass

a, b = Node(), Node()  # a reference cycle made after the tuning...
a.other, b.other = b, a
alive = weakref.ref(a)
del a, b
gc.collect()  # ...is still collected: only what existed at the tuning is frozen
print(json.dumps({"before": before, "after": gc.get_threshold(),
                  "frozen": gc.get_freeze_count() - frozen_before,
                  "cycle_freed": alive() is None}))
"""


def _gc_child(threshold: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _GC_CHILD, str(threshold)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_garbage_collector_is_tuned_at_start_and_still_collects_new_cycles():
    assert ServerConfig().gc_threshold == 10_000
    tuned = _gc_child(10_000)
    assert tuned["after"] == [10_000, *tuned["before"][1:]]
    assert tuned["frozen"] > 1000  # the imported modules' objects
    assert tuned["cycle_freed"]
    untouched = _gc_child(0)
    assert untouched["after"] == untouched["before"] and untouched["frozen"] == 0
    assert untouched["cycle_freed"]


def test_the_server_tunes_the_collector_before_it_starts(monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "tune_garbage_collector", seen.append)
    monkeypatch.setattr(cli, "set_intra_op_threads", lambda n: [])  # (process-wide)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # the loop choice then fails: exit 2
    config = ServerConfig(gc_threshold=1234, event_loop="uvloop")
    assert cli.run_server(config) == 2
    assert seen == [1234]


def test_gc_threshold_setting_is_validated(monkeypatch):
    with pytest.raises(ConfigError, match="gc_threshold"):
        ServerConfig(gc_threshold=-1).validate()
    monkeypatch.setenv("FLOWSERVE_GC_THRESHOLD", "2000")
    assert cli.resolve_config(cli.build_parser().parse_args([])).gc_threshold == 2000
