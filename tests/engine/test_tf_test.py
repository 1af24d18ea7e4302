"""``tf.test``: a real ``tf.test.TestCase`` subclass run through unittest, its helpers'
passing and failing cases, and the module's GPU/build queries."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

import numpy as np
import pytest

import engine as tf
from engine import devices


class _Sample(tf.test.TestCase):
    """Runs inside ``test_testcase_runs_under_unittest``; every method should pass."""

    __test__ = False  # run by unittest inside the tests below, not collected by pytest

    def test_cached_session_evaluates_on_the_test_graph(self):
        x = tf.constant([1.0, 2.0])
        with self.cached_session() as sess:
            assert sess.graph is tf.get_default_graph() is x.graph
            assert tf.get_default_session() is sess
            self.assertAllClose(self.evaluate(tf.square(x)), [1.0, 4.0])
            with self.cached_session() as again:
                assert again is sess

    def test_session_and_variables(self):
        v = tf.Variable(3.0)
        with self.session() as sess:
            sess.run(tf.global_variables_initializer())
            self.assertAllEqual(sess.run(v * 2.0), 6.0)
            self.assertDeviceEqual(tf.constant(1.0).device, "/device:CPU:0")

    def test_evaluate_without_session_uses_test_session(self):
        self.assertAllClose(self.evaluate({"a": tf.constant([1, 2]) + 1}), {"a": [2, 3]})

    def test_graph_is_fresh_per_test(self):
        assert tf.get_default_graph().get_operations() == []
        assert tf.get_default_graph().seed == 87654321

    def test_array_assertions(self):
        self.assertAllClose(
            {"a": [1.0, np.nan], "b": (1, [2.0])}, {"a": [1.0, np.nan], "b": (1, [2.0])}
        )
        self.assertAllCloseAccordingToType(np.float16([1.0]), np.float16([1.0005]))
        self.assertNear(1.0, 1.05, 0.1)
        self.assertArrayNear([1.0, 2.0], [1.05, 1.95], 0.1)
        self.assertShapeEqual(np.zeros((2, 3)), tf.zeros([2, 3]))

    def test_raises_op_error(self):
        x = tf.placeholder(tf.float32, [2])
        with self.assertRaisesOpError("must feed a value|You must feed"):
            self.evaluate(x + 1.0)

    def test_temp_dir_is_per_test(self):
        d = self.get_temp_dir()
        assert os.path.isdir(d) and d == self.get_temp_dir()
        assert os.path.dirname(d) == tf.test.get_temp_dir()


def _run(case_cls, *names) -> unittest.TestResult:
    suite = unittest.TestSuite(case_cls(n) for n in names)
    result = unittest.TestResult()
    suite.run(result)
    return result


def test_testcase_runs_under_unittest():
    names = unittest.TestLoader().getTestCaseNames(_Sample)
    result = _run(_Sample, *names)
    assert result.testsRun == len(names) == 7
    assert result.errors == [] and result.failures == []


class _Failing(tf.test.TestCase):
    __test__ = False

    def test_close(self):
        self.assertAllClose([1.0, 2.0], [1.0, 2.1])

    def test_close_shape(self):
        self.assertAllClose([1.0, 2.0], [[1.0, 2.0]])

    def test_close_type_float32(self):
        self.assertAllCloseAccordingToType(np.float32([1.0]), np.float32([1.0005]))

    def test_equal(self):
        self.assertAllEqual([1, 2, 3], [1, 5, 3])

    def test_near(self):
        self.assertNear(1.0, 1.2, 0.1)

    def test_shape(self):
        self.assertShapeEqual(np.zeros((2, 3)), tf.zeros([3, 2]))

    def test_device(self):
        self.assertDeviceEqual("/cpu:0", "/device:GPU:0")

    def test_op_error_not_raised(self):
        with self.assertRaisesOpError("anything"):
            self.evaluate(tf.constant(1))

    def test_op_error_wrong_message(self):
        x = tf.placeholder(tf.float32, [2])
        with self.assertRaisesOpError("no such words"):
            self.evaluate(x)


FAILURES = {
    "test_close": "not close where",
    "test_close_shape": "Shape mismatch: expected (2,), got (1, 2)",
    "test_close_type_float32": "Not equal to tolerance",
    "test_equal": "not equal lhs = array([2])",
    "test_near": "1.000000 != 1.200000 +/- 0.100000",
    "test_shape": "not equal lhs = array([2, 3])",
    "test_device": "Devices /device:CPU:0 and /device:GPU:0 are not equal",
    "test_op_error_not_raised": "OpError not raised",
    "test_op_error_wrong_message": "Exception of type",
}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_helper_failures_are_reported(name):
    result = _run(_Failing, name)
    assert result.errors == []
    assert len(result.failures) == 1
    assert FAILURES[name] in result.failures[0][1]


def test_cached_session_refuses_another_graph():
    class Case(tf.test.TestCase):
        __test__ = False

        def test_it(self):
            with self.cached_session():
                pass
            with self.cached_session(graph=tf.Graph()):
                pass

    result = _run(Case, "test_it")
    assert len(result.errors) == 1 and "different than the one" in result.errors[0][1]


def test_assert_shape_equal_rejects_lists():
    class Case(tf.test.TestCase):
        __test__ = False

        def test_it(self):
            self.assertShapeEqual([1, 2], np.zeros(2))

    result = _run(Case, "test_it")
    assert "input_a must be a Numpy ndarray" in result.errors[0][1]


def test_module_queries_follow_engine_devices():
    assert tf.test.is_gpu_available() == (devices.gpu_count() > 0)
    assert tf.test.gpu_device_name() == ("/device:GPU:0" if devices.gpu_count() else "")
    assert tf.test.is_built_with_rocm() is False
    assert tf.test.is_built_with_xla() is False
    assert tf.test.is_built_with_gpu_support() == tf.test.is_built_with_cuda()
    assert tf.test.get_temp_dir() == tf.test.get_temp_dir()
    assert callable(tf.test.compute_gradient) and callable(tf.test.main)


def test_main_runs_the_main_modules_tests(tmp_path):
    script = tmp_path / "prog_test.py"
    script.write_text(
        "import engine as tf\n"
        "class T(tf.test.TestCase):\n"
        "    def test_ok(self):\n"
        "        self.assertAllEqual(self.evaluate(tf.constant([1]) * 2), [2])\n"
        "    def test_bad(self):\n"
        "        self.assertAllEqual([1], [3])\n"
        "if __name__ == '__main__':\n"
        "    tf.test.main()\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": root},
        check=False,
        timeout=300,
    )
    assert proc.returncode == 1
    assert "Ran 2 tests" in proc.stderr and "failures=1" in proc.stderr
