"""Op-table rows for the recurrent operators LSTM, GRU and RNN (every opset version).

Each direction is one ``while_loop`` over time, so the sequence length may be unknown when
the model is imported. The input projection ``X W^T + Wb`` of every step is one matmul
before the loop; the loop carries the hidden (and cell) state and writes each step's output
into a ``TensorArray``. A reverse direction walks ``t = T-1 .. 0`` over the same arrays.

``sequence_lens`` masks steps at or past a batch element's length: the state keeps its last
valid value (so ``Y_h``/``Y_c`` are the last valid step's) and ``Y`` is zero there, as
onnxruntime computes it (an empty sequence's ``Y_h``/``Y_c`` are zero too). A reverse
direction then starts at the element's own last step.

Activation alpha/beta values are consumed in activation order, only by the functions that
take them, and missing ones take onnxruntime's defaults (its RNN kernels use 0 for Affine,
ScaledTanh and ThresholdedRelu, not the standalone operators' defaults).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import UnsupportedModelError, _const, register
from engine.formats.onnx.tensors import OnnxFormatError
from engine.framework.graph import Tensor, control_dependencies
from engine.ops.logging_ops import Assert
from engine.ops.reduction import reduce_all

__all__: list[str] = []

_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_DEFAULT_ACTIVATIONS = {
    "LSTM": ("Sigmoid", "Tanh", "Tanh"),
    "GRU": ("Sigmoid", "Tanh"),
    "RNN": ("Tanh",),
}
_DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}
MAX_HIDDEN_SIZE = 1 << 20


def _sc(x: Tensor, v: float) -> Tensor:
    return _const(v, x.dtype.base_dtype)


def _leaky_relu(x, a, b):
    return tf.where_v2(tf.greater_equal(x, _sc(x, 0)), x, tf.multiply(_sc(x, a), x))


def _thresholded_relu(x, a, b):
    return tf.where_v2(tf.greater(x, _sc(x, a)), x, _sc(x, 0))


def _hard_sigmoid(x, a, b):
    y = tf.add(tf.multiply(_sc(x, a), x), _sc(x, b))
    return tf.clip_by_value(y, _sc(x, 0), _sc(x, 1))


def _elu(x, a, b):
    neg = tf.multiply(_sc(x, a), tf.expm1(x))
    return tf.where_v2(tf.greater_equal(x, _sc(x, 0)), x, neg)


def _softsign(x, a, b):
    return tf.realdiv(x, tf.add(_sc(x, 1), tf.abs(x)))


# lower-cased name -> (takes alpha, takes beta, default alpha, default beta, fn(x, a, b)),
# onnxruntime's table for its recurrent kernels.
_ACTIVATIONS = {
    "sigmoid": (False, False, 0.0, 0.0, lambda x, a, b: tf.sigmoid(x)),
    "tanh": (False, False, 0.0, 0.0, lambda x, a, b: tf.tanh(x)),
    "relu": (False, False, 0.0, 0.0, lambda x, a, b: tf.maximum(x, _sc(x, 0))),
    "affine": (True, True, 0.0, 0.0, lambda x, a, b: tf.add(tf.multiply(_sc(x, a), x), _sc(x, b))),
    "leakyrelu": (True, False, 0.01, 0.0, _leaky_relu),
    "thresholdedrelu": (True, False, 0.0, 0.0, _thresholded_relu),
    "scaledtanh": (
        True,
        True,
        0.0,
        0.0,
        lambda x, a, b: tf.multiply(_sc(x, a), tf.tanh(tf.multiply(_sc(x, b), x))),
    ),
    "hardsigmoid": (True, True, 0.2, 0.5, _hard_sigmoid),
    "elu": (True, False, 1.0, 0.0, _elu),
    "softsign": (False, False, 0.0, 0.0, _softsign),
    "softplus": (False, False, 0.0, 0.0, lambda x, a, b: tf.nn.softplus(x)),
}


@dataclass
class _Spec:
    """What a recurrent node's attributes say, checked."""

    kind: str
    hidden: int
    reverse: tuple[bool, ...]
    activations: list[list]  # per direction: [(fn, alpha, beta), ...]
    clip: float | None
    input_forget: bool
    linear_before_reset: bool
    layout: int


def _where(node: dict) -> str:
    return f"{node.get('op_type')} node {node.get('name', '')!r}"


def _activations(ctx, node, kind: str, n_dirs: int) -> list[list]:
    """Per direction, the activation functions with their alpha/beta bound."""
    per_dir = len(_DEFAULT_ACTIVATIONS[kind])
    names = ctx.attr(node, "activations", None)
    if names is None:
        names = list(_DEFAULT_ACTIVATIONS[kind]) * n_dirs
    names = [n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n) for n in names]
    if len(names) == per_dir and n_dirs == 2:
        names = names * 2
    elif kind == "RNN" and n_dirs == 1 and len(names) == 2:
        names = names[:1]  # RNN's schema default lists two activations for one direction
    if len(names) != per_dir * n_dirs:
        raise UnsupportedModelError(
            f"{_where(node)}: {len(names)} activations given, expected {per_dir * n_dirs} "
            f"({per_dir} per direction)"
        )
    alphas = list(ctx.attr(node, "activation_alpha", []) or [])
    betas = list(ctx.attr(node, "activation_beta", []) or [])
    bound = []
    for name in names:
        row = _ACTIVATIONS.get(name.lower())
        if row is None:
            raise UnsupportedModelError(
                f"{_where(node)}: activation {name!r} is not supported (expected one of "
                "Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
                "HardSigmoid, Elu, Softsign, Softplus)"
            )
        takes_a, takes_b, alpha, beta, fn = row
        if takes_a and alphas:
            alpha = float(alphas.pop(0))
        if takes_b and betas:
            beta = float(betas.pop(0))
        bound.append((fn, alpha, beta))
    return [bound[d * per_dir : (d + 1) * per_dir] for d in range(n_dirs)]


def _flag(ctx, node, name: str, allowed=(0, 1)) -> int:
    value = ctx.attr(node, name, 0)
    if value not in allowed:
        raise UnsupportedModelError(
            f"{_where(node)}: {name}={value!r} is not supported (expected one of {allowed})"
        )
    return int(value)


def _read_spec(ctx, node, kind: str) -> _Spec:
    direction = ctx.attr(node, "direction", "forward")
    if direction not in _DIRECTIONS:
        raise UnsupportedModelError(
            f"{_where(node)}: direction={direction!r} is not supported (expected forward, "
            "reverse or bidirectional)"
        )
    reverse = _DIRECTIONS[direction]
    r = ctx.input(node, 2)
    hidden = ctx.attr(node, "hidden_size", None)
    if hidden is None:
        if r.shape.ndims != 3 or r.shape[2] is None:
            raise UnsupportedModelError(f"{_where(node)} needs hidden_size or R's static shape")
        hidden = r.shape[2]
    hidden = int(hidden)
    if not 0 < hidden <= MAX_HIDDEN_SIZE:
        raise OnnxFormatError(f"{_where(node)}: hidden_size {hidden} is out of range")
    clip = ctx.attr(node, "clip", None)
    if clip is not None and not float(clip) > 0:
        raise OnnxFormatError(f"{_where(node)}: clip must be positive, got {clip}")
    return _Spec(
        kind=kind,
        hidden=hidden,
        reverse=reverse,
        activations=_activations(ctx, node, kind, len(reverse)),
        clip=None if clip is None else float(clip),
        input_forget=bool(_flag(ctx, node, "input_forget")) if kind == "LSTM" else False,
        linear_before_reset=bool(_flag(ctx, node, "linear_before_reset"))
        if kind == "GRU"
        else False,
        layout=_flag(ctx, node, "layout"),
    )


def _check_weights(node: dict, spec: _Spec, weights: dict[str, Tensor | None]) -> None:
    """Static shapes of W, R, B and P that contradict hidden_size and direction."""
    n_dirs, rows, hidden = len(spec.reverse), _GATES[spec.kind] * spec.hidden, spec.hidden
    expected = {
        "W": (n_dirs, rows, None),
        "R": (n_dirs, rows, hidden),
        "B": (n_dirs, 2 * rows),
        "P": (n_dirs, 3 * hidden),
    }
    for name, t in weights.items():
        if t is None or t.shape.ndims is None:
            continue
        dims = t.shape.as_list()
        ok = len(dims) == len(expected[name]) and all(
            want is None or got is None or got == want for got, want in zip(dims, expected[name])
        )
        if not ok:
            shown = ["input_size" if v is None else v for v in expected[name]]
            raise OnnxFormatError(f"{_where(node)}: {name} has shape {dims}, expected {shown}")


# -----------------------------------------------------------------------------------------
# Cells: one time step, from the step's input projection and the previous state
# -----------------------------------------------------------------------------------------


@dataclass
class _Direction:
    """One direction's weights, sliced out of the node's stacked inputs."""

    r: Tensor  # [G*H, H] (GRU: the z and r gates' [2H, H]), used as h @ r^T
    r_h: Tensor | None  # GRU: the hidden gate's [H, H]
    rb: Tensor | None  # the recurrence bias the cell adds itself (GRU's Rbh) or None
    peep: list[Tensor] | None  # P split into (i, o, f)
    acts: list


def _act(d: _Direction, k: int, x: Tensor, clip: float | None) -> Tensor:
    if clip is not None:
        x = tf.clip_by_value(x, _sc(x, -clip), _sc(x, clip))
    fn, alpha, beta = d.acts[k]
    return fn(x, alpha, beta)


def _lstm_cell(spec: _Spec, d: _Direction, xg, h, c):
    z = tf.add(xg, tf.matmul(h, d.r, transpose_b=True))
    zi, zo, zf, zc = tf.split(z, 4, axis=1)
    if d.peep is not None:
        zi = tf.add(zi, tf.multiply(d.peep[0], c))
        zf = tf.add(zf, tf.multiply(d.peep[2], c))
    i = _act(d, 0, zi, spec.clip)
    if spec.input_forget:
        f = tf.subtract(_sc(i, 1), i)
    else:
        f = _act(d, 0, zf, spec.clip)
    c_new = tf.add(tf.multiply(f, c), tf.multiply(i, _act(d, 1, zc, spec.clip)))
    if d.peep is not None:
        zo = tf.add(zo, tf.multiply(d.peep[1], c_new))
    o = _act(d, 0, zo, spec.clip)
    return tf.multiply(o, _act(d, 2, c_new, None)), c_new


def _gru_cell(spec: _Spec, d: _Direction, xg, h, c):
    xz, xr, xh = tf.split(xg, 3, axis=1)
    hz, hr = tf.split(tf.matmul(h, d.r, transpose_b=True), 2, axis=1)
    z = _act(d, 0, tf.add(xz, hz), spec.clip)
    r = _act(d, 0, tf.add(xr, hr), spec.clip)
    if spec.linear_before_reset:
        rec = tf.multiply(r, tf.add(tf.matmul(h, d.r_h, transpose_b=True), d.rb))
    else:
        rec = tf.add(tf.matmul(tf.multiply(r, h), d.r_h, transpose_b=True), d.rb)
    hh = _act(d, 1, tf.add(xh, rec), spec.clip)
    return tf.add(tf.multiply(tf.subtract(_sc(z, 1), z), hh), tf.multiply(z, h)), None


def _rnn_cell(spec: _Spec, d: _Direction, xg, h, c):
    return _act(d, 0, tf.add(xg, tf.matmul(h, d.r, transpose_b=True)), spec.clip), None


_CELLS = {"LSTM": _lstm_cell, "GRU": _gru_cell, "RNN": _rnn_cell}


# -----------------------------------------------------------------------------------------
# The loop over time
# -----------------------------------------------------------------------------------------


def _run(spec: _Spec, d: _Direction, reverse: bool, xw, lens, h0, c0, want_y: bool):
    """Runs one direction over ``xw`` ([T, B, G*H]); returns (Y [T, B, H] or None, h, c)."""
    length = tf.shape(xw, out_type=tf.int32)[0]
    cell = _CELLS[spec.kind]
    one = _const(1, tf.int32)
    has_c = c0 is not None
    state_shape = tf.TensorShape([None, spec.hidden])

    def keep_going(i, *rest):
        return tf.less(i, length)

    def step(i, h, *rest):
        c = rest[0] if has_c else None
        t = tf.subtract(tf.subtract(length, one), i) if reverse else i
        h_new, c_new = cell(spec, d, tf.gather(xw, t), h, c)
        y = h_new
        if lens is not None:
            valid = tf.expand_dims(tf.less(t, lens), 1)
            h_new = tf.where_v2(valid, h_new, h)
            c_new = tf.where_v2(valid, c_new, c) if has_c else None
            y = tf.where_v2(valid, h_new, _sc(h_new, 0))
        out = [tf.add(i, one), h_new] + ([c_new] if has_c else [])
        if want_y:
            out.append(rest[-1].write(t, y))
        return out

    loop_vars = [_const(0, tf.int32), h0] + ([c0] if has_c else [])
    invariants = [tf.TensorShape([])] + [state_shape] * (1 + has_c)
    if want_y:
        loop_vars.append(
            tf.TensorArray(h0.dtype.base_dtype, size=length, element_shape=state_shape)
        )
        invariants.append(None)
    res = tf.while_loop(keep_going, step, loop_vars, shape_invariants=invariants)
    y = res[-1].stack() if want_y else None
    h, c = res[1], res[2] if has_c else None
    if lens is not None:
        # onnxruntime's final states of an empty sequence are zero, not the initial ones.
        started = tf.expand_dims(tf.greater(lens, _const(0, tf.int32)), 1)
        h = tf.where_v2(started, h, _sc(h, 0))
        c = tf.where_v2(started, c, _sc(c, 0)) if has_c else None
    return y, h, c


def _direction(spec: _Spec, k: int, x2d, shape_tbg, ins) -> tuple:
    """Direction ``k``'s input projection ([T, B, G*H], biases folded in) and weights."""
    w, r, b, p = ins
    g, hidden = _GATES[spec.kind], spec.hidden
    xw = tf.matmul(x2d, tf.gather(w, k), transpose_b=True)
    rb_cell = None
    if b is not None:
        wb, rb = tf.split(tf.gather(b, k), 2, axis=0)
        if spec.kind == "GRU":
            # Rbh sits inside the reset gate's product; only Rbz and Rbr fold into xw.
            rb_zr, rb_cell = tf.split(rb, [2 * hidden, hidden], axis=0)
            rb = tf.concat([rb_zr, _const([0] * hidden, rb_zr.dtype.base_dtype)], 0)
        xw = tf.add(xw, tf.add(wb, rb))
    elif spec.kind == "GRU":
        rb_cell = _const([0] * hidden, xw.dtype.base_dtype)
    peep = None if p is None else tf.split(tf.gather(p, k), 3, axis=0)
    xw = tf.reshape(xw, tf.concat([shape_tbg, _const([g * hidden], tf.int32)], 0))
    r_k, r_h = tf.gather(r, k), None
    if spec.kind == "GRU":
        r_k, r_h = tf.split(r_k, [2 * hidden, hidden], axis=0)
    return xw, _Direction(r_k, r_h, rb_cell, peep, spec.activations[k])


def _initial(state: Tensor | None, k: int, zeros: Tensor, hidden: int) -> Tensor:
    # The reshape gives an input of unknown shape the loop's [batch, hidden] invariant.
    return zeros if state is None else tf.reshape(tf.gather(state, k), [-1, hidden])


def _checked_lens(lens: Tensor, length: Tensor) -> Tensor:
    """``lens``, failing the run (as onnxruntime does) unless each is in [0, length]."""
    ok = tf.logical_and(
        reduce_all(tf.greater_equal(lens, _const(0, tf.int32))),
        reduce_all(tf.less_equal(lens, length)),
    )
    message = "Invalid value/s in sequence_lens. All values must be >= 0 and <= seq_length"
    with control_dependencies([Assert(ok, [message, lens, "seq_length", length])]):
        return tf.identity(lens)


def _checked_state(state: Tensor, dims: tuple, what: str) -> Tensor:
    """``state``, failing the run (as onnxruntime does) unless it is [directions, batch,
    hidden]: the loop would otherwise reshape or broadcast it into the wrong states."""
    want = tf.stack([_const(dims[0], tf.int32), dims[1], _const(dims[2], tf.int32)])
    have = tf.shape(state, out_type=tf.int32)
    ok = reduce_all(tf.equal(have, want))
    with control_dependencies([Assert(ok, [f"Input {what} must have shape", want, "got", have])]):
        return tf.identity(state)


def _recurrent(kind: str):
    def convert(ctx, node):
        spec = _read_spec(ctx, node, kind)
        x, w, r = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)
        b, lens, h0 = (ctx.optional(node, i) for i in (3, 4, 5))
        c0 = ctx.optional(node, 6) if kind == "LSTM" else None
        p = ctx.optional(node, 7) if kind == "LSTM" else None
        _check_weights(node, spec, {"W": w, "R": r, "B": b, "P": p})
        if spec.layout:
            x = tf.transpose(x, [1, 0, 2])
            h0 = None if h0 is None else tf.transpose(h0, [1, 0, 2])
            c0 = None if c0 is None else tf.transpose(c0, [1, 0, 2])
        shape = tf.shape(x, out_type=tf.int32)
        if lens is not None:
            lens = _checked_lens(tf.cast(lens, tf.int32), shape[0])
        dims = (len(spec.reverse), shape[1], spec.hidden)
        h0 = None if h0 is None else _checked_state(h0, dims, "initial_h")
        c0 = None if c0 is None else _checked_state(c0, dims, "initial_c")
        x2d = tf.reshape(x, tf.concat([_const([-1], tf.int32), shape[2:]], 0))
        zeros = tf.fill(tf.stack([shape[1], _const(spec.hidden, tf.int32)]), _sc(x, 0))
        outs = node.get("output", [])
        want_y = bool(outs and outs[0])
        ys, hs, cs = [], [], []
        for k, reverse in enumerate(spec.reverse):
            xw, d = _direction(spec, k, x2d, shape[:2], (w, r, b, p))
            c_init = _initial(c0, k, zeros, spec.hidden) if kind == "LSTM" else None
            y, h, c = _run(
                spec, d, reverse, xw, lens, _initial(h0, k, zeros, spec.hidden), c_init, want_y
            )
            ys.append(y)
            hs.append(h)
            cs.append(c)
        y = tf.stack(ys, axis=1) if want_y else None
        y_h = tf.stack(hs, axis=0)
        y_c = tf.stack(cs, axis=0) if kind == "LSTM" else None
        if spec.layout:
            y = None if y is None else tf.transpose(y, [2, 0, 1, 3])
            y_h = tf.transpose(y_h, [1, 0, 2])
            y_c = None if y_c is None else tf.transpose(y_c, [1, 0, 2])
        return [y, y_h] + ([y_c] if kind == "LSTM" else [])

    return convert


register("LSTM", (1, 7, 14, 22), _recurrent("LSTM"))
register("GRU", (1, 3, 7, 14, 22), _recurrent("GRU"))
register("RNN", (1, 7, 14, 22), _recurrent("RNN"))
