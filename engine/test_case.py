"""``tf.test.TestCase`` and ``tf.test``'s module functions, as TF 1.15's.

A ``TestCase`` starts each test on a fresh default graph with TF's default graph seed;
``session()``/``cached_session()``/``test_session()`` give an engine ``Session`` on that graph
(pinned to CPU:0 unless ``use_gpu=True``), ``evaluate`` runs tensors in the default session,
and the ``assert*`` helpers compare arrays with TF's tolerances and messages::

    class SquareTest(tf.test.TestCase):
        def test_square(self):
            with self.cached_session():
                self.assertAllClose(self.evaluate(tf.square([2.0])), [4.0])

    if __name__ == "__main__":
        tf.test.main()
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import math
import random
import re
import shutil
import tempfile
import unittest
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from engine import devices, errors
from engine.framework.device_spec import canonical_name
from engine.framework.graph import Tensor, get_default_graph, reset_default_graph
from engine.ops.random import set_random_seed
from engine.session import Session, get_default_session

__all__ = [
    "TestCase",
    "main",
    "get_temp_dir",
    "is_gpu_available",
    "gpu_device_name",
    "is_built_with_cuda",
    "is_built_with_gpu_support",
    "is_built_with_rocm",
    "is_built_with_xla",
    "is_cpu_target_available",
]

DEFAULT_GRAPH_SEED = 87654321  # TF's random_seed.DEFAULT_GRAPH_SEED
_temp_dir: list[str] = []


def get_temp_dir() -> str:
    """A temporary directory for this process, removed at exit (the same one each call)."""
    if not _temp_dir:
        path = tempfile.mkdtemp(prefix="engine_test_")
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _temp_dir.append(path)
    return _temp_dir[0]


def main(argv=None):
    """Runs the tests of ``__main__`` with unittest (exits with its status)."""
    return unittest.main(module="__main__", argv=argv)


def is_built_with_cuda() -> bool:
    """Whether the engine can use CUDA GPUs here (cupy is installed)."""
    return importlib.util.find_spec("cupy") is not None


def is_built_with_gpu_support() -> bool:
    return is_built_with_cuda()


def is_built_with_rocm() -> bool:
    return False


def is_built_with_xla() -> bool:
    return False


def is_cpu_target_available(cpu: str) -> bool:  # noqa: ARG001 - TF's signature
    return True


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability=None) -> bool:  # noqa: ARG001 - all engine GPUs are CUDA
    """Whether a session here can place ops on a GPU (of at least the given compute
    capability, a ``(major, minor)`` pair)."""
    if devices.gpu_count() == 0:
        return False
    if min_cuda_compute_capability is None:
        return True
    cc = str(devices.cupy_or_none().cuda.Device(0).compute_capability)
    return (int(cc[:-1]), int(cc[-1])) >= tuple(min_cuda_compute_capability)


def gpu_device_name() -> str:
    """``"/device:GPU:0"`` when a GPU is available, else ``""``."""
    return "/device:GPU:0" if is_gpu_available() else ""


def _is_numeric_structure(a) -> bool:
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError):
        return False
    return arr.dtype != object


class _not_a_test_method:  # noqa: N801 - used as a decorator
    """A method unittest's loader does not collect although its name starts with ``test``
    (``test_session``): read from the class it is not callable, from an instance it is the
    bound method."""

    def __init__(self, fn: Callable):
        self._fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, instance, owner=None):
        return self if instance is None else self._fn.__get__(instance, owner)


class TestCase(unittest.TestCase):
    """``unittest.TestCase`` with TF1's graph, session and array helpers."""

    def __init__(self, methodName: str = "runTest"):  # noqa: N803 - unittest's name
        super().__init__(methodName)
        self._cached_session = None
        self._tempdir = None

    def setUp(self) -> None:
        self._clear_cached_session()
        random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        reset_default_graph()
        set_random_seed(DEFAULT_GRAPH_SEED)

    def tearDown(self) -> None:
        self._clear_cached_session()

    def _clear_cached_session(self) -> None:
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None

    def get_temp_dir(self) -> str:
        """A directory unique to this test (the same one for each call within it)."""
        if not self._tempdir:
            self._tempdir = tempfile.mkdtemp(dir=get_temp_dir())
        return self._tempdir

    # -- sessions -------------------------------------------------------------------------
    @contextlib.contextmanager
    def _as_default(self, sess: Session, use_gpu: bool, force_gpu: bool) -> Iterator[Session]:
        with sess.graph.as_default(), sess.as_default():
            if force_gpu:
                if not is_gpu_available():
                    raise errors.NotFoundError(None, None, "force_gpu: no GPU is available")
                with sess.graph.device("/device:GPU:0"):
                    yield sess
            elif not use_gpu:
                with sess.graph.device("/device:CPU:0"):
                    yield sess
            else:
                yield sess

    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """A new ``Session`` on ``graph`` (default: the default graph), made the default
        session and graph inside the ``with``; closed on exit."""
        with Session(graph=graph, config=config) as sess:
            with self._as_default(sess, use_gpu, force_gpu):
                yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """The same ``Session`` for every call within a test (closed in ``tearDown``)."""
        if self._cached_session is None:
            self._cached_session = Session(graph=graph, config=config)
        elif graph is not None and self._cached_session.graph is not graph:
            raise ValueError(
                "The graph used to get the cached session is different than the one that was "
                "used to create the session. Maybe create a new session with "
                "self.session()"
            )
        with self._as_default(self._cached_session, use_gpu, force_gpu):
            yield self._cached_session

    @_not_a_test_method
    @contextlib.contextmanager
    def test_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """``cached_session()`` without a graph, else ``session(graph)`` (TF1's deprecated
        name)."""
        manager = self.cached_session if graph is None else self.session
        with manager(graph, config, use_gpu, force_gpu) as sess:
            yield sess

    def evaluate(self, tensors):
        """The values of ``tensors`` (any fetch structure) from the default session, or from
        ``test_session()`` when there is none."""
        sess = get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with self.test_session() as sess:
            return sess.run(tensors)

    def _ndarray(self, a) -> np.ndarray:
        if isinstance(a, Tensor) or hasattr(a, "_as_graph_element"):
            a = self.evaluate(a)
        return a if isinstance(a, np.ndarray) else np.array(a)

    # -- array assertions -----------------------------------------------------------------
    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        """``a`` and ``b`` (arrays, tensors, or nested dicts/lists/tuples of them) are equal
        within ``atol + rtol * abs(b)`` elementwise, NaNs matching NaNs."""
        self._all_close_recursive(a, b, rtol, atol, msg, path=[])

    def _all_close_recursive(self, a, b, rtol, atol, msg, path) -> None:
        where = f"At path [{']['.join(map(repr, path))}]" if path else ""
        if isinstance(a, Mapping) or isinstance(b, Mapping):
            if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
                raise ValueError(f"Can't compare dict to non-dict, a{where}={a}, b={b}.")
            self.assertEqual(set(a), set(b), f"mismatched keys: {where} {msg or ''}")
            for k in a:
                self._all_close_recursive(a[k], b[k], rtol, atol, msg, [*path, k])
        elif isinstance(a, (list, tuple)) and not _is_numeric_structure(a):
            if len(a) != len(b):
                raise ValueError(f"Mismatched length: a{where} has {len(a)} items, b has {len(b)}")
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                self._all_close_recursive(x, y, rtol, atol, msg, [*path, i])
        else:
            note = f"{where}: {msg}" if where else msg
            self._array_all_close(a, b, rtol, atol, note)

    def _array_all_close(self, a, b, rtol, atol, msg) -> None:
        a, b = self._ndarray(a), self._ndarray(b)
        self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}.")
        if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            cond = np.logical_or(
                np.abs(a - b) > atol + rtol * np.abs(b), np.isnan(a) != np.isnan(b)
            )
            msgs = [msg or ""]
            x, y = (a[np.where(cond)], b[np.where(cond)]) if a.ndim else (a, b)
            msgs.append(f"not close where = {np.where(cond)}" if a.ndim else "")
            msgs += [f"not close lhs = {x}", f"not close rhs = {y}"]
            msgs.append(f"dtype = {a.dtype}, shape = {a.shape}")
            np.testing.assert_allclose(
                a, b, rtol=rtol, atol=atol, err_msg="\n".join(msgs), equal_nan=True
            )

    def assertAllCloseAccordingToType(  # noqa: N802
        self,
        a,
        b,
        rtol=1e-6,
        atol=1e-6,
        float_rtol=1e-6,
        float_atol=1e-6,
        half_rtol=1e-3,
        half_atol=1e-3,
        bfloat16_rtol=1e-2,  # noqa: ARG002 - TF's signature; the engine has no bfloat16
        bfloat16_atol=1e-2,  # noqa: ARG002
        msg=None,
    ):
        """``assertAllClose`` with the tolerances loosened to ``float_*`` for float32 and to
        ``half_*`` for float16 operands."""
        a, b = self._ndarray(a), self._ndarray(b)
        kinds = {a.dtype, b.dtype}
        if kinds & {np.dtype(np.float32), np.dtype(np.complex64)}:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.dtype(np.float16) in kinds:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        """``a`` and ``b`` have the same shape and elements (NaN equals NaN for floats)."""
        msg = msg or ""
        a, b = self._ndarray(a), self._ndarray(b)
        self.assertEqual(
            a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}. {msg}"
        )
        same = a == b
        if a.dtype.kind in "fc":
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if not np.all(same):
            diff = np.logical_not(same)
            x, y = (a[np.where(diff)], b[np.where(diff)]) if a.ndim else (a, b)
            detail = f"not equal lhs = {x!r}\nnot equal rhs = {y!r}"
            np.testing.assert_array_equal(a, b, err_msg=f"{msg}\n{detail}")

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802
        """``|f1 - f2| <= err``."""
        self.assertTrue(
            f1 == f2 or math.fabs(f1 - f2) <= err,
            f"{f1:f} != {f2:f} +/- {err:f}{' (' + msg + ')' if msg is not None else ''}",
        )

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802
        """Same length and each pair within ``err``."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2, strict=True):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertShapeEqual(self, input_a, input_b, msg=None):  # noqa: N802
        """The shapes of two arrays or tensors (static shapes for tensors) are equal."""
        shapes = []
        for label, x in (("input_a", input_a), ("input_b", input_b)):
            if isinstance(x, Tensor):
                shapes.append(x.get_shape().as_list())
            elif isinstance(x, (np.ndarray, np.generic)):
                shapes.append(list(x.shape))
            else:
                raise TypeError(
                    f"{label} must be a Numpy ndarray, Numpy scalar, or a Tensor.Instead "
                    f"received {type(x)}"
                )
        self.assertAllEqual(shapes[0], shapes[1], msg=msg)

    def assertDeviceEqual(self, device1, device2, msg=None):  # noqa: N802
        """Two device names (or ``DeviceSpec``s) name the same device."""
        device1, device2 = canonical_name(device1), canonical_name(device2)
        self.assertEqual(device1, device2, f"Devices {device1} and {device2} are not equal. {msg}")

    # -- error assertions -----------------------------------------------------------------
    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type, expected_err_re_or_predicate):  # noqa: N802
        """The ``with`` body raises ``exception_type`` whose message matches the regex (or
        for which the predicate is true)."""
        if callable(expected_err_re_or_predicate):
            predicate: Callable = expected_err_re_or_predicate
        else:
            pattern = expected_err_re_or_predicate

            def predicate(e):
                return re.search(pattern, str(e)) is not None

        try:
            yield
        except exception_type as e:
            if not predicate(e):
                raise AssertionError(f"Exception of type {type(e)}: {e}") from e
        else:
            self.fail(f"{exception_type.__name__} not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802
        """The ``with`` body raises a ``tf.errors.OpError`` matching the regex/predicate."""
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)

    def get_default_graph(self):
        return get_default_graph()
