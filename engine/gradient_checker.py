"""Finite-difference checks of symbolic gradients (TF1's ``tf.test.compute_gradient``)."""

from __future__ import annotations

import numpy as np

from engine.framework.graph import Tensor
from engine.gradients import gradients
from engine.ops import array as array_ops
from engine.session import Session, get_default_session

__all__ = ["compute_gradient", "compute_gradient_error"]


def _session_for(graph):
    sess = get_default_session()
    if sess is not None and sess.graph is graph:
        return sess, False
    return Session(graph=graph), True


def _jacobians(x, x_shape, x_value, y, y_shape, delta, sess, extra_feed):
    x_dtype = x.dtype.base_dtype.np
    y_dtype = y.dtype.base_dtype.np
    x_size = int(np.prod(x_shape, dtype=np.int64))
    y_size = int(np.prod(y_shape, dtype=np.int64))
    with y.graph.as_default():
        dy = array_ops.placeholder(y.dtype.base_dtype, shape=y_shape, name="grad_check_dy")
        grad = gradients(y, x, grad_ys=dy)[0]
    theoretical = np.zeros((x_size, y_size), dtype=np.float64)
    if grad is not None:
        for j in range(y_size):
            dy_val = np.zeros(y_size, y_dtype)
            dy_val[j] = 1
            feed = {x: x_value, dy: dy_val.reshape(y_shape), **extra_feed}
            g = np.asarray(sess.run(grad, feed), np.float64).reshape(-1)
            theoretical[:, j] = g if g.size else 0
    numerical = np.zeros((x_size, y_size), dtype=np.float64)
    flat = x_value.reshape(-1).astype(x_dtype, copy=True)
    for i in range(x_size):
        orig = flat[i]
        flat[i] = orig + delta
        y_pos = np.asarray(sess.run(y, {x: flat.reshape(x_shape), **extra_feed}), np.float64)
        flat[i] = orig - delta
        y_neg = np.asarray(sess.run(y, {x: flat.reshape(x_shape), **extra_feed}), np.float64)
        flat[i] = orig
        numerical[i, :] = ((y_pos - y_neg) / (2 * delta)).reshape(-1)
    return theoretical, numerical


def compute_gradient(
    x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None, extra_feed_dict=None
):
    """Symbolic and numerical Jacobians of ``y`` with respect to ``x``.

    Each Jacobian has one row per element of x and one column per element of y. ``x`` may be a
    list (with ``x_shape`` and ``x_init_value`` lists), giving a list of pairs.
    """
    if isinstance(x, (list, tuple)):
        inits = x_init_value or [None] * len(x)
        return [
            compute_gradient(xi, si, y, y_shape, vi, delta, init_targets, extra_feed_dict)
            for xi, si, vi in zip(x, x_shape, inits)
        ]
    if hasattr(x, "_ref") and not isinstance(x, Tensor):
        x = x.value()
    sess, owned = _session_for(y.graph)
    try:
        if init_targets:
            for t in init_targets:
                sess.run(t)
        if x_init_value is None:
            rng = np.random.default_rng(0)
            x_value = rng.uniform(-1.0, 1.0, size=x_shape).astype(x.dtype.base_dtype.np)
        else:
            x_value = np.asarray(x_init_value, dtype=x.dtype.base_dtype.np)
            if tuple(x_value.shape) != tuple(x_shape):
                raise ValueError(f"x_init_value has shape {x_value.shape}, expected {x_shape}")
        return _jacobians(
            x, list(x_shape), x_value, y, list(y_shape), delta, sess, dict(extra_feed_dict or {})
        )
    finally:
        if owned:
            sess.close()


def compute_gradient_error(
    x, x_shape, y, y_shape, x_init_value=None, delta=1e-3, init_targets=None, extra_feed_dict=None
) -> float:
    """The largest absolute difference between the symbolic and numerical Jacobians."""
    grads = compute_gradient(
        x, x_shape, y, y_shape, x_init_value, delta, init_targets, extra_feed_dict
    )
    if isinstance(grads, tuple):
        grads = [grads]
    err = 0.0
    for theoretical, numerical in grads:
        if theoretical.size:
            err = max(err, float(np.max(np.abs(theoretical - numerical))))
    return err
