"""Ops on variable-length sequences: ``ReverseSequence`` (``tf.reverse_sequence``, what
``bidirectional_dynamic_rnn`` runs its backward cell over) and ``RaggedTensorToTensor``,
which pads a ragged tensor (flat values plus one row partition per ragged dimension) into a
dense one: Keras' ``TextVectorization`` ends with it, TF2 text models call it through
``.to_tensor()``.

A row partition is ``ROW_SPLITS`` (``[0, 2, 2, 5]``: row ``i`` holds values ``splits[i] ..
splits[i+1]``), or ``FIRST_DIM_SIZE`` (the outer row count) followed by ``VALUE_ROWIDS``
(the row of each value, non-decreasing). Values past the requested shape are dropped; the
rest of the output is ``default_value``, as in TF's kernel."""

from __future__ import annotations

import numpy as np

from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import INDEX, base, check_dtype, create
from engine.ops.array import _dims, _int_tensor, _invalid, _with_rank
from engine.tensor_shape import TensorShape

__all__ = ["reverse_sequence"]

_TYPES = ("ROW_SPLITS", "FIRST_DIM_SIZE", "VALUE_ROWIDS")


def _ragged_rank(types: list[str]) -> int:
    for t in types:
        if t not in _TYPES:
            raise ValueError(f"Unsupported partition type {t!r} (expected one of {_TYPES})")
    if types and types[0] == "FIRST_DIM_SIZE":
        if any(t != "VALUE_ROWIDS" for t in types[1:]) or len(types) < 2:
            raise ValueError(
                f"FIRST_DIM_SIZE must be followed by VALUE_ROWIDS partitions, got {types}"
            )
        return len(types) - 1
    if any(t != "ROW_SPLITS" for t in types) or not types:
        raise ValueError(f"Partition types must all be ROW_SPLITS, got {types}")
    return len(types)


def _to_tensor_infer(o):
    shape_t, values, default = o._inputs[:3]
    parts = o._inputs[3:]
    check_dtype(o, 0, INDEX, "Tshape")
    for i in range(3, len(o._inputs)):
        check_dtype(o, i, INDEX, "Tindex")
    if base(default) is not base(values):
        raise ShapeError(
            f"default_value has dtype {base(default).name}, values {base(values).name}"
        )
    try:
        ragged = _ragged_rank(list(o._attrs["row_partition_types"]))
    except ValueError as e:
        raise ShapeError(str(e)) from None
    if len(parts) != len(o._attrs["row_partition_types"]):
        raise ShapeError(
            f"{len(parts)} row partition tensors for {len(o._attrs['row_partition_types'])} "
            "partition types"
        )
    inner = values._shape.as_tuple()
    rank = None if inner is None else 1 + ragged + len(inner) - 1
    dims = None if rank is None else [None] * rank
    known = constant_value(shape_t)
    if known is not None and np.ndim(known) == 1:
        wanted = [int(d) for d in np.asarray(known).tolist()]
        if dims is not None and len(wanted) != rank:
            raise ShapeError(f"shape {wanted} has rank {len(wanted)}; the ragged tensor has {rank}")
        dims = [None if d < 0 else d for d in wanted]
    if dims is not None and inner is not None:
        for k, d in enumerate(inner[1:]):
            pos = 1 + ragged + k
            if dims[pos] is None:
                dims[pos] = d
    return [(base(values), TensorShape(dims))]


def _splits_of(types, parts, nvalues: int) -> list[np.ndarray]:
    """Row splits for each ragged dimension, outermost first, checked."""
    parts = [np.asarray(p).astype(np.int64).reshape(-1) for p in parts]
    if types[0] == "FIRST_DIM_SIZE":
        nrows = int(parts[0][0]) if parts[0].size else -1
        if nrows < 0:
            raise _invalid(f"FIRST_DIM_SIZE must be a non-negative scalar, got {parts[0]}")
        splits = []
        for level, rowids in enumerate(parts[1:]):
            if rowids.size and (np.any(np.diff(rowids) < 0) or rowids[0] < 0):
                raise _invalid(f"VALUE_ROWIDS of dimension {level + 1} must be non-decreasing")
            if rowids.size and rowids[-1] >= nrows:
                raise _invalid(
                    f"VALUE_ROWIDS of dimension {level + 1} names row {rowids[-1]} of {nrows}"
                )
            counts = np.bincount(rowids, minlength=nrows) if rowids.size else np.zeros(nrows)
            splits.append(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
            nrows = rowids.size
        total = nrows
    else:
        splits = parts
        for level, sp in enumerate(splits):
            if sp.size == 0 or sp[0] != 0 or np.any(np.diff(sp) < 0):
                raise _invalid(
                    f"ROW_SPLITS of dimension {level + 1} must start at 0 and not decrease"
                )
        for outer, inner in zip(splits, splits[1:]):
            if outer[-1] != inner.size - 1:
                raise _invalid("ROW_SPLITS of consecutive dimensions do not match")
        total = int(splits[-1][-1])
    if total != nvalues:
        raise _invalid(f"The row partitions describe {total} values, but there are {nvalues}")
    return splits


@op(
    "RaggedTensorToTensor",
    infer=_to_tensor_infer,
    differentiable=False,
    inputs=("shape", "values", "default_value", "row_partition_tensors*"),
    attrs=(Attr("row_partition_types", "list(string)"),),
    flags=OpFlags(device_types=("CPU",)),
)
def _ragged_to_tensor(xp, shape, values, default, *parts, row_partition_types):
    types = list(row_partition_types)
    try:
        ragged = _ragged_rank(types)
    except ValueError as e:
        raise _invalid(str(e)) from None
    values = np.asarray(values)
    splits = _splits_of(types, parts, values.shape[0] if values.ndim else 0)
    # each value's index: its row at each ragged level, innermost last
    element = np.arange(values.shape[0])
    cols = []
    for sp in reversed(splits):
        row = np.searchsorted(sp, element, side="right") - 1
        cols.insert(0, element - sp[row])
        element = row
    index = [element] + cols
    natural = [len(splits[0]) - 1] + [
        int(np.max(np.diff(sp))) if sp.size > 1 else 0 for sp in splits
    ]
    natural += list(values.shape[1:])
    wanted = np.asarray(shape).astype(np.int64).reshape(-1)
    if wanted.size == 0 or (wanted.size == 1 and np.ndim(shape) == 0 and wanted[0] == -1):
        out_shape = natural
    else:
        if wanted.size != len(natural):
            raise _invalid(
                f"shape {wanted.tolist()} has rank {wanted.size}, expected {len(natural)}"
            )
        out_shape = [n if w < 0 else int(w) for w, n in zip(wanted.tolist(), natural)]
    default = np.asarray(default, dtype=values.dtype)
    try:
        out = np.empty(out_shape, dtype=values.dtype)
        out[...] = np.broadcast_to(default, out_shape[1 + ragged :]) if default.ndim else default
    except ValueError:
        raise _invalid(
            f"default_value of shape {list(default.shape)} does not broadcast to "
            f"{out_shape[1 + ragged :]}"
        ) from None
    keep = np.ones(element.shape, bool)
    for k, idx in enumerate(index):
        keep &= idx < out_shape[k]
    inner = tuple(slice(0, min(a, b)) for a, b in zip(out_shape[1 + ragged :], values.shape[1:]))
    target = tuple(i[keep] for i in index) + inner
    out[target] = values[(keep,) + inner]
    return out


def _reverse_sequence_infer(o):
    x, lengths = o._inputs
    check_dtype(o, 1, INDEX, "Tlen")
    _with_rank(lengths, 1)
    seq, batch = o._attrs["seq_dim"], o._attrs["batch_dim"]
    dims = _dims(x)
    if dims is not None:
        _check_sequence_dims(seq, batch, len(dims), ShapeError)
        n = lengths._shape.as_tuple()[0] if lengths._shape.rank == 1 else None
        b = dims[batch % len(dims)]
        if n is not None and b is not None and n != b:
            raise ShapeError(
                f"Dimensions must be equal, but are {n} and {b} for seq_lengths and "
                f"input.dims({batch})"
            )
    return [(base(x), x._shape)]


def _check_sequence_dims(seq: int, batch: int, rank: int, err) -> None:
    if not -rank <= batch < rank:
        raise err(f"Invalid batch_dim {batch} for an input of rank {rank}")
    if not 0 <= seq < rank:
        raise err(f"Invalid seq_dim {seq} for an input of rank {rank}")
    if seq == batch % rank:
        raise err(f"seq_dim == batch_dim == {seq}")


@op(
    "ReverseSequence",
    infer=_reverse_sequence_infer,
    grad=lambda o, g: [
        reverse_sequence(g, o.inputs[1], o._attrs["seq_dim"], o._attrs["batch_dim"]),
        None,
    ],
    inputs=("input", "seq_lengths"),
    attrs=(Attr("seq_dim", "int"), Attr("batch_dim", "int", default=0)),
    flags=OpFlags(host_inputs=(1,)),
)
def _reverse_sequence_kernel(xp, x, lengths, *, seq_dim, batch_dim=0):
    _check_sequence_dims(seq_dim, batch_dim, x.ndim, _invalid)
    batch = batch_dim % x.ndim
    lens = np.asarray(lengths).astype(np.int64).reshape(-1)
    if lens.shape[0] != x.shape[batch]:
        raise _invalid(
            f"Length of seq_lengths != input.dims({batch_dim}), ({lens.shape[0]} vs. "
            f"{x.shape[batch]})"
        )
    steps = x.shape[seq_dim]
    for b, n in enumerate(lens.tolist()):
        if n < 0 or n > steps:
            raise _invalid(f"seq_lens({b}) must be in [0, input.dims({seq_dim})={steps}]: got {n}")
    t = np.arange(steps)[None, :]
    n = lens[:, None]
    idx = np.where(t < n, n - 1 - t, t)  # [batch, steps]
    moved = xp.moveaxis(x, (batch, seq_dim), (0, 1))
    idx = xp.asarray(idx.reshape(idx.shape + (1,) * (x.ndim - 2)))
    out = xp.take_along_axis(moved, xp.broadcast_to(idx, moved.shape), axis=1)
    return xp.moveaxis(out, (0, 1), (batch, seq_dim))


def reverse_sequence(
    input,  # noqa: A002 - TF's name
    seq_lengths,
    seq_axis=None,
    batch_axis=None,
    name=None,
    seq_dim=None,
    batch_dim=None,
):
    """Reverses the first ``seq_lengths[b]`` entries along ``seq_axis`` of each batch row
    ``b`` (the rest stay in place)."""
    seq_axis = seq_axis if seq_axis is not None else seq_dim
    batch_axis = batch_axis if batch_axis is not None else (batch_dim or 0)
    if seq_axis is None:
        raise ValueError("reverse_sequence needs seq_axis")
    with name_scope(name, "ReverseSequence", [input, seq_lengths]) as scope:
        x = convert_to_tensor(input, name="input")
        lengths = _int_tensor(seq_lengths, "seq_lengths")
        attrs = {"seq_dim": int(seq_axis), "batch_dim": int(batch_axis)}
        return create("ReverseSequence", [x, lengths], attrs, scope).outputs[0]
