"""``tf.contrib.layers``' layer functions as TF 1.15 defines them (and ``tf_slim`` still
does): variables named as contrib names them (``Conv/weights``, ``Conv/biases``,
``fully_connected/weights``, ``BatchNorm/moving_mean``, ``EmbedSequence/embeddings``), so
checkpoints written by TF1 programs restore, and each layer's defaults (ReLU after
``conv2d`` and ``fully_connected``, ``normalizer_fn`` instead of biases, ``batch_norm``'s
``decay=0.999`` without ``gamma``, ``is_training=True``)."""

from __future__ import annotations

import functools

from engine import init_ops
from engine.core_layers import dropout as _layers_dropout
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, add_to_collection, name_scope
from engine.ops import array as array_ops
from engine.ops import array_transform, control_flow, nn, nn_conv, reduction
from engine.ops import math as math_ops
from engine.ops.embedding import embedding_lookup
from engine.ops.matmul import matmul
from engine.variable_scope import get_variable, variable_scope

__all__ = [
    "conv2d",
    "fully_connected",
    "batch_norm",
    "max_pool2d",
    "avg_pool2d",
    "dropout",
    "embed_sequence",
]


def _pair(v, what: str) -> list[int]:
    vals = [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v]
    if len(vals) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {v!r}")
    return vals


def _finish(out, normalizer_fn, normalizer_params, biases, activation_fn, collections):
    if normalizer_fn is not None:
        out = normalizer_fn(out, **(normalizer_params or {}))
    elif biases is not None:
        out = nn.bias_add(out, biases)
    if activation_fn is not None:
        out = activation_fn(out)
    return _collect(out, collections)


def _weights_and_biases(shape, num_outputs, kw, dtype):
    w = get_variable(
        "weights",
        shape,
        dtype=dtype,
        initializer=kw["weights_initializer"],
        regularizer=kw["weights_regularizer"],
        trainable=kw["trainable"],
        collections=kw["variables_collections"],
    )
    b = None
    if kw["normalizer_fn"] is None and kw["biases_initializer"] is not None:
        b = get_variable(
            "biases",
            [num_outputs],
            dtype=dtype,
            initializer=kw["biases_initializer"],
            regularizer=kw["biases_regularizer"],
            trainable=kw["trainable"],
            collections=kw["variables_collections"],
        )
    return w, b


def _options(**kw):
    kw.setdefault("weights_initializer", init_ops.GlorotUniform())
    kw.setdefault("biases_initializer", init_ops.zeros_initializer())
    for k in ("weights_regularizer", "biases_regularizer", "normalizer_fn", "normalizer_params"):
        kw.setdefault(k, None)
    kw.setdefault("trainable", True)
    vc = kw.pop("variables_collections", None)
    kw["variables_collections"] = (
        None if vc is None else [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES, *vc]
    )
    return kw


def conv2d(
    inputs,
    num_outputs,
    kernel_size,
    stride=1,
    padding="SAME",
    data_format=None,
    rate=1,
    activation_fn=nn.relu,
    reuse=None,
    outputs_collections=None,
    scope=None,
    **kwargs,
):
    """A 2-D convolution (NHWC): ``scope/weights`` ``[kh, kw, in, out]``, ``scope/biases``."""
    if data_format not in (None, "NHWC"):
        raise ValueError(f"data_format {data_format!r} is not supported (NHWC)")
    kw = _options(**kwargs)
    with variable_scope(scope, "Conv", [inputs], reuse=reuse):
        x = convert_to_tensor(inputs, name="inputs")
        kh, kwidth = _pair(kernel_size, "kernel_size")
        sh, sw = _pair(stride, "stride")
        rh, rw = _pair(rate, "rate")
        channels = x.shape.as_list()[-1]
        if channels is None:
            raise ValueError("conv2d needs the input's channel count known")
        shape = [kh, kwidth, channels, int(num_outputs)]
        w, b = _weights_and_biases(shape, num_outputs, kw, x.dtype.base_dtype)
        out = nn_conv.conv2d(x, w, [1, sh, sw, 1], padding.upper(), dilations=[1, rh, rw, 1])
        return _finish(
            out, kw["normalizer_fn"], kw["normalizer_params"], b, activation_fn, outputs_collections
        )


def fully_connected(
    inputs,
    num_outputs,
    activation_fn=nn.relu,
    reuse=None,
    outputs_collections=None,
    scope=None,
    **kwargs,
):
    """A dense layer over the last axis: ``scope/weights`` ``[in, out]``, ``scope/biases``."""
    kw = _options(**kwargs)
    with variable_scope(scope, "fully_connected", [inputs], reuse=reuse):
        x = convert_to_tensor(inputs, name="inputs")
        depth = x.shape.as_list()[-1]
        if depth is None:
            raise ValueError("fully_connected needs the input's last dimension known")
        w, b = _weights_and_biases([depth, int(num_outputs)], num_outputs, kw, x.dtype.base_dtype)
        if x.shape.rank == 2:
            out = matmul(x, w)
        else:
            out = array_ops.reshape(matmul(array_ops.reshape(x, [-1, depth]), w),
                                    array_transform.concat(
                                        [array_ops.shape(x)[:-1], [int(num_outputs)]], 0
                                    ))  # fmt: skip
        return _finish(
            out, kw["normalizer_fn"], kw["normalizer_params"], b, activation_fn, outputs_collections
        )


def _moving(name, shape, dtype, initializer, collections):
    return get_variable(
        name, shape, dtype=dtype, initializer=initializer, trainable=False, collections=collections
    )


def batch_norm(
    inputs,
    decay=0.999,
    center=True,
    scale=False,
    epsilon=0.001,
    activation_fn=None,
    param_initializers=None,
    is_training=True,
    updates_collections=GraphKeys.UPDATE_OPS,
    reuse=None,
    trainable=True,
    scope=None,
    data_format="NHWC",
    **unused,
):
    """Batch normalization over the last axis: ``scope/beta``, ``scope/gamma`` (with
    ``scale``), ``scope/moving_mean``, ``scope/moving_variance``. Training normalizes with
    the batch's moments and moves the averages (``moving -= (moving - batch) * (1 - decay)``;
    a 4-D input's variance Bessel-corrected for the average, as TF's fused kernel) through
    ``updates_collections``, or with the output when it is None."""
    if data_format != "NHWC":
        raise ValueError(f"data_format {data_format!r} is not supported (NHWC)")
    bad = set(unused) - {"variables_collections", "outputs_collections", "fused", "batch_weights"}
    if bad:
        raise TypeError(f"batch_norm() got unsupported arguments {sorted(bad)}")
    inits = param_initializers or {}
    moving = [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MOVING_AVERAGE_VARIABLES]
    with variable_scope(scope, "BatchNorm", [inputs], reuse=reuse):
        x = convert_to_tensor(inputs, name="inputs")
        rank, c = x.shape.rank, x.shape.as_list()[-1]
        if rank is None or c is None:
            raise ValueError("batch_norm needs the input's rank and channel count known")
        dt = x.dtype.base_dtype
        beta = gamma = None
        if center:
            beta = get_variable("beta", [c], dt, inits.get("beta", init_ops.zeros_initializer()),
                                trainable=trainable)  # fmt: skip
        if scale:
            gamma = get_variable("gamma", [c], dt, inits.get("gamma", init_ops.ones_initializer()),
                                 trainable=trainable)  # fmt: skip
        mean_v = _moving(
            "moving_mean", [c], dt, inits.get("moving_mean", init_ops.zeros_initializer()), moving
        )
        var_init = inits.get("moving_variance", init_ops.ones_initializer())
        var_v = _moving("moving_variance", [c], dt, var_init, moving)

        if is_training is False:
            out = nn.batch_normalization(x, mean_v, var_v, beta, gamma, epsilon)
        else:
            mean, var = nn.moments(x, list(range(rank - 1)))
            moved = var
            if rank == 4:  # the fused kernel's running variance is the unbiased one
                n = math_ops.cast(reduction.reduce_prod(array_ops.shape(x)[:-1]), dt)
                moved = var * n / math_ops.maximum(n - 1.0, 1.0)
            if is_training is not True:  # a bool tensor: the moving averages when false
                pick = functools.partial(control_flow.cond, is_training)
                mean, var = pick(lambda: (mean, var), lambda: (mean_v.value(), var_v.value()))
                moved = pick(lambda: moved, var_v.value)
            out = nn.batch_normalization(x, mean, var, beta, gamma, epsilon)
            # moving -= (moving - batch) * (1 - decay): no change when not training
            updates = [
                mean_v.assign_sub((mean_v - mean) * (1.0 - decay)),
                var_v.assign_sub((var_v - moved) * (1.0 - decay)),
            ]
            if updates_collections is None:
                with control_flow.control_dependencies(updates):
                    out = array_ops.identity(out)
            else:
                for u in updates:
                    add_to_collection(updates_collections, u)
        if activation_fn is not None:
            out = activation_fn(out)
    return out


def _collect(out, collections):
    for c in collections or ():
        add_to_collection(c, out)
    return out


def _pool(kind, inputs, kernel_size, stride, padding, data_format, scope, default):
    if data_format != "NHWC":
        raise ValueError(f"data_format {data_format!r} is not supported (NHWC)")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride")
    with name_scope(scope, default, [inputs]) as name:
        fn = nn_conv.max_pool if kind == "max" else nn_conv.avg_pool
        return fn(inputs, [1, kh, kw, 1], [1, sh, sw, 1], padding.upper(), name=name)


def max_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):  # fmt: skip
    """Max pooling (``stride`` 2 and ``VALID`` by default, as contrib's)."""
    out = _pool("max", inputs, kernel_size, stride, padding, data_format, scope, "MaxPool2D")
    return _collect(out, outputs_collections)


def avg_pool2d(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC",
               outputs_collections=None, scope=None):  # fmt: skip
    """Average pooling (``stride`` 2 and ``VALID`` by default, as contrib's)."""
    out = _pool("avg", inputs, kernel_size, stride, padding, data_format, scope, "AvgPool2D")
    return _collect(out, outputs_collections)


def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):  # fmt: skip
    """Dropout keeping ``keep_prob`` of the values while ``is_training`` (a bool or tensor)."""
    with name_scope(scope, "Dropout", [inputs]):
        rate = (
            math_ops.subtract(1.0, keep_prob)
            if not isinstance(keep_prob, float)
            else 1.0 - keep_prob
        )
        out = _layers_dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed,
                              training=is_training)  # fmt: skip
        return _collect(out, outputs_collections)


def embed_sequence(ids, vocab_size=None, embed_dim=None, unique=False, initializer=None,
                   regularizer=None, trainable=True, scope=None, reuse=None):  # fmt: skip
    """``scope/embeddings`` ``[vocab_size, embed_dim]`` looked up for ``ids`` (``unique``
    only changes how TF gathers, not the result)."""
    del unique
    if vocab_size is None or embed_dim is None:
        raise ValueError("Must specify vocab size and embedding dimension")
    with variable_scope(scope, "EmbedSequence", [ids], reuse=reuse):
        embeddings = get_variable(
            "embeddings",
            [int(vocab_size), int(embed_dim)],
            initializer=initializer,
            regularizer=regularizer,
            trainable=trainable,
        )
        return embedding_lookup(embeddings, ids)
