"""Table-driven op tests: one row per op case, checked against a numpy reference.

Each ``Case`` builds a graph from input tensors and is checked three ways: with the inputs as
constants, fed through placeholders whose dimensions are all unknown, and fed through
placeholders of unknown rank. Every run compares values and dtype with the numpy reference,
checks the static shape is compatible with (and, where given, equal to) the result, and that
the output does not alias an input unless the op is registered as aliasing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import engine as tf
from engine import devices
from engine.framework import registry
from tests import fake_device


@dataclass
class Case:
    id: str
    build: Callable  # (*input_tensors) -> Tensor or list of Tensors
    inputs: list  # numpy arrays (or Python values) fed to build
    ref: Callable  # (*numpy_inputs) -> numpy array or list of arrays
    static_shape: object = None  # expected static shape with constant inputs (list or None)
    rtol: float = 1e-6
    atol: float = 1e-6
    # Run with placeholders of unknown dims / unknown rank too (off for ops whose inputs must
    # be compile-time constants, e.g. an axis argument).
    feed: bool = True
    # Inputs (by index) that stay constants even in the fed variants.
    const_inputs: tuple = ()
    # Differentiable inputs (by index) for a finite-difference gradient check (issue 3).
    grad_inputs: tuple = ()
    extra: dict = field(default_factory=dict)

    def __str__(self):
        return self.id


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _np(v):
    return np.asarray(v)


def _assert_matches(case: Case, got, want, what: str):
    got, want = _np(got), _np(want)
    assert got.dtype == want.dtype, f"{case.id} [{what}]: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{case.id} [{what}]: shape {got.shape} != {want.shape}"
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(
            got, want, rtol=case.rtol, atol=case.atol, err_msg=f"{case.id} [{what}]"
        )
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{case.id} [{what}]")


def _build(case: Case, mode: str):
    g = tf.Graph()
    feeds = {}
    with g.as_default():
        ins = []
        for i, v in enumerate(case.inputs):
            arr = np.asarray(v) if not isinstance(v, np.ndarray) else v
            if mode == "const" or i in case.const_inputs or not case.feed:
                ins.append(tf.constant(v))
            else:
                dtype = tf.constant(v).dtype  # the dtype a constant of v would have
                shape = [None] * arr.ndim if mode == "unknown_dims" else None
                p = tf.placeholder(dtype, shape=shape, name=f"in{i}")
                ins.append(p)
                feeds[p] = v
        out = case.build(*ins)
    return g, out, feeds


def check_case(case: Case) -> None:
    for v in case.inputs:
        assert isinstance(v, (np.ndarray, np.generic)), (
            f"{case.id}: table inputs must be numpy values with explicit dtypes, got {v!r}"
        )
    want = [_np(w) for w in _as_list(case.ref(*[np.asarray(v) for v in case.inputs]))]
    modes = ["const"] + (["unknown_dims", "unknown_rank"] if case.feed else [])
    if not any(t in devices.DEVICE_TYPES for t in ("TEST",)) and devices.gpu_count() == 0:
        # CPU-only run: once more with a TEST device present, so every op also runs placed
        # off the host (ops with a GPU kernel on TEST:0, string ops on the CPU, copies in
        # between) with checked mode verifying each kernel keeps to its device.
        modes.append("device")
    for mode in modes:
        g, out, feeds = _build(
            case,
            "unknown_dims"
            if mode == "device" and case.feed
            else "const"
            if mode == "device"
            else mode,
        )
        outs = _as_list(out)
        assert len(outs) == len(want), f"{case.id}: {len(outs)} outputs, reference has {len(want)}"
        if mode == "device":
            with fake_device.registered(1), tf.Session(graph=g) as sess:
                got = sess.run(outs, feeds)
        else:
            with tf.Session(graph=g) as sess:
                got = sess.run(outs, feeds)
        for k, (t, gv, wv) in enumerate(zip(outs, got, want)):
            what = f"{mode} output {k}"
            _assert_matches(case, gv, wv, what)
            assert t.dtype.as_numpy_dtype == np.asarray(wv).dtype.type or (
                t.dtype == tf.string and np.asarray(wv).dtype.kind == "O"
            ), f"{case.id} [{what}]: static dtype {t.dtype.name} != {np.asarray(wv).dtype}"
            assert t.shape.is_compatible_with(np.shape(wv)), (
                f"{case.id} [{what}]: static shape {t.shape} incompatible with {np.shape(wv)}"
            )
            if mode == "const" and case.static_shape is not None:
                want_static = case.static_shape if len(outs) == 1 else case.static_shape[k]
                assert (
                    t.shape.as_list() == list(want_static) if want_static is not None else True
                ), f"{case.id}: static shape {t.shape} != {want_static}"
    check_no_alias(case)


def check_no_alias(case: Case) -> None:
    """Outputs must not share memory with inputs unless the op type is registered aliasing."""
    g, out, _ = _build(case, "const")
    outs = _as_list(out)
    aliasing_ok = all(t.op._opdef.flags.aliases for t in outs)
    if aliasing_ok:
        return
    with tf.Session(graph=g) as sess:
        # Evaluate the kernels directly on the constant inputs.
        for t in outs:
            op = t.op
            vals = []
            for i in op.inputs:
                if i.op.type != "Const":
                    break
                vals.append(i.op.get_attr("value"))
            else:
                if op.type == "Const":
                    continue
                kernel = registry.get(op.type).kernel
                attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
                if registry.get(op.type).bind is not None:
                    continue
                res = _as_list(kernel(np, *vals, **attrs))
                for r in res:
                    for v in vals:
                        if isinstance(r, np.ndarray) and r.size and np.shares_memory(r, v):
                            raise AssertionError(
                                f"{case.id}: {op.type} output aliases an "
                                "input but the op is not registered aliases=True"
                            )
        del sess


def _float64(v):
    arr = np.asarray(v)
    return arr.astype(np.float64) if arr.dtype.kind == "f" else arr


def check_gradient(case: Case, tol: float = 1e-5, delta: float = 1e-6) -> None:
    """Finite differences vs symbolic gradients for each of ``case.grad_inputs``.

    Floating inputs are promoted to float64 so the numerical Jacobian is accurate; the
    other inputs stay as they are (constants). Multi-output cases check their first output.
    """
    inputs = [_float64(v) for v in case.inputs]
    for gi in case.grad_inputs:
        g = tf.Graph()
        with g.as_default():
            ins = [tf.constant(v) for v in inputs]
            x = tf.placeholder(tf.float64, shape=inputs[gi].shape, name="x")
            ins[gi] = x
            out = _as_list(case.build(*ins))[0]
            assert out.dtype.base_dtype.is_floating, f"{case.id}: output is not floating"
            with tf.Session(graph=g) as sess:
                y_shape = list(np.shape(sess.run(out, {x: inputs[gi]})))
                err = tf.test.compute_gradient_error(
                    x, list(inputs[gi].shape), out, y_shape, x_init_value=inputs[gi], delta=delta
                )
        assert err < tol, f"{case.id}: gradient w.r.t. input {gi} off by {err}"
