"""ConfigProto.intra_op_parallelism_threads and tf.config.threading: the threads one op may use.

The count is process-wide and set once (as TensorFlow's shared intra-op pool), so each case
runs in a fresh interpreter and reports what it saw as JSON.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import engine as tf

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = """
import json, logging
import numpy as np
import threadpoolctl
import engine as tf

warnings = []
logging.getLogger("tensorflow").addHandler(
    type("H", (logging.Handler,), {"emit": lambda self, r: warnings.append(r.getMessage())})()
)

def blas():
    return sorted({p["num_threads"] for p in threadpoolctl.threadpool_info()
                   if p["user_api"] == "blas"})

def product(sess):
    a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    return sess.run(tf.matmul(a, a, transpose_b=True)).tolist()
"""


def run_case(body: str) -> dict:
    code = PRELUDE + textwrap.dedent(body)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_first_session_that_asks_sets_the_threads_of_every_op_in_the_process():
    seen = run_case(
        """
        before = blas()
        plain = tf.Session()  # 0: the system picks; nothing changes
        after_plain = blas()
        three = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=3))
        result = product(three)
        after_three = blas()
        one = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
        print(json.dumps({
            "before": before, "after_plain": after_plain, "after_three": after_three,
            "after_one": blas(), "count": tf.config.threading.get_intra_op_parallelism_threads(),
            "result": result, "one_runs": product(one), "warnings": warnings,
        }))
        """
    )
    assert seen["after_plain"] == seen["before"]  # BLAS's own default, whatever the cores
    assert seen["after_three"] == [3] and seen["after_one"] == [3] and seen["count"] == 3
    assert seen["result"] == seen["one_runs"] == [[5.0, 14.0], [14.0, 50.0]]
    (warning,) = seen["warnings"]
    assert "intra_op_parallelism_threads=1 ignored" in warning
    assert "already runs ops on 3 intra-op thread" in warning


def test_config_threading_sets_the_count_once():
    seen = run_case(
        """
        unset = tf.config.threading.get_intra_op_parallelism_threads()
        tf.config.threading.set_intra_op_parallelism_threads(0)  # 0: nothing to set
        still_unset = tf.config.threading.get_intra_op_parallelism_threads()
        tf.config.threading.set_intra_op_parallelism_threads(5)
        tf.config.threading.set_intra_op_parallelism_threads(5)  # the same count: fine
        same = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=5))
        try:
            tf.config.threading.set_intra_op_parallelism_threads(3)
            error = None
        except RuntimeError as e:
            error = str(e)
        print(json.dumps({
            "unset": unset, "still_unset": still_unset, "blas": blas(), "error": error,
            "count": tf.config.threading.get_intra_op_parallelism_threads(),
            "warnings": warnings,
        }))
        """
    )
    assert seen["unset"] == 0 and seen["still_unset"] == 0
    assert seen["blas"] == [5] and seen["count"] == 5
    assert "cannot be modified after initialization" in seen["error"]
    assert "already runs ops on 5 intra-op thread" in seen["error"]
    assert seen["warnings"] == []  # a session asking for the count in effect: no warning


def test_a_session_built_on_any_thread_sets_the_count():
    """threadpoolctl lets only the thread that first set OpenBLAS's limit set it again; the
    engine's limits are process-wide decisions, made on whichever thread builds a session."""
    seen = run_case(
        """
        import threading
        from engine import threads
        threads.limit_blas_threads(2)  # the main thread sets a limit first
        def build():
            tf.Session(graph=tf.Graph(), config=tf.ConfigProto(intra_op_parallelism_threads=3))
        t = threading.Thread(target=build)
        t.start()
        t.join()
        print(json.dumps({"blas": blas(),
                          "count": tf.config.threading.get_intra_op_parallelism_threads()}))
        """
    )
    assert seen == {"blas": [3], "count": 3}


def test_inter_op_threads_are_recorded():
    seen = run_case(
        """
        tf.config.threading.set_inter_op_parallelism_threads(4)
        tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=-1))  # caller's thread
        print(json.dumps({"inter": tf.config.threading.get_inter_op_parallelism_threads(),
                          "intra": tf.config.threading.get_intra_op_parallelism_threads()}))
        """
    )
    assert seen == {"inter": 4, "intra": 0}


@pytest.mark.parametrize("value", [-1, "2", 1.5, True, None])
def test_a_bad_thread_count_is_a_clear_error(value):
    config = tf.ConfigProto(intra_op_parallelism_threads=value)
    with pytest.raises(ValueError, match="intra_op_parallelism_threads must be a non-negative"):
        tf.Session(graph=tf.Graph(), config=config)
    with pytest.raises(ValueError, match="num_threads must be a non-negative integer"):
        tf.config.threading.set_intra_op_parallelism_threads(value)
    with pytest.raises(ValueError, match="num_threads must be an integer"):
        tf.config.threading.set_inter_op_parallelism_threads("2")
