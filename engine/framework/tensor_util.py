"""Graph-construction-time evaluation used by shape inference (TF's ``tensor_util``).

``constant_value(t)`` returns a tensor's value when it follows from constants and static
shapes alone (by running stateless kernels with numpy), else None.
``constant_value_as_shape(t)`` reads a 1-D shape tensor as a partially known ``TensorShape``.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from engine.framework.graph import Tensor
from engine.tensor_shape import TensorShape, unknown_shape

__all__ = ["constant_value", "constant_value_as_shape", "make_ndarray", "is_tensor"]

_MAX_DEPTH = 24
_MAX_ELEMENTS = 1 << 16
_NEVER_FOLD = frozenset(["Placeholder", "PlaceholderWithDefault", "PyFunc", "Print"])


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def make_ndarray(value) -> np.ndarray:
    return np.asarray(value)


def constant_value(tensor: Tensor, partial_ok: bool = False):  # noqa: ARG001 - TF API compatibility
    """The numpy value of ``tensor`` if it is known while building the graph, else None."""
    if not isinstance(tensor, Tensor):
        return None
    return _value(tensor, 0, {})


def _value(t: Tensor, depth: int, memo: dict):
    key = id(t)
    if key in memo:
        return memo[key]
    memo[key] = None
    op = t._op
    typ = op._type
    result = None
    if typ == "Const":
        result = op._attrs["value"]
    elif typ == "Shape":
        s = op._inputs[0]._shape
        if s.is_fully_defined():
            result = np.array(s.as_list(), dtype=t._dtype.np)
    elif typ == "Size":
        s = op._inputs[0]._shape
        if s.is_fully_defined():
            result = np.array(s.num_elements(), dtype=t._dtype.np)
    elif typ == "Rank":
        r = op._inputs[0]._shape.rank
        if r is not None:
            result = np.array(r, dtype=np.int32)
    elif (
        depth < _MAX_DEPTH
        and typ not in _NEVER_FOLD
        and not op._opdef.flags.stateful
        and op._opdef.kernel is not None
        and not op._control_inputs
        and _may_be_small(t)
    ):
        args = []
        for i in op._inputs:
            if i._dtype._is_ref:
                break
            v = _value(i, depth + 1, memo)
            if v is None:
                break
            args.append(v)
        else:
            attrs = {k: v for k, v in op._attrs.items() if k[0] != "_"}
            try:
                with np.errstate(all="ignore"):
                    out = partial(op._opdef.kernel, np, **attrs)(*args)
            except Exception:  # noqa: BLE001 - not foldable now; the runtime will report it
                out = None
            if out is not None:
                out = out if len(op._outputs) == 1 else out[t._value_index]
                if isinstance(out, (np.ndarray, np.generic)) and np.size(out) <= _MAX_ELEMENTS:
                    result = np.asarray(out)
    memo[key] = result
    return result


def _may_be_small(t: Tensor) -> bool:
    # Folding runs the kernel while the graph is built: a model file's Fill, Tile or
    # BroadcastTo of constants to a huge static shape would allocate all of it first.
    if t._shape.rank is None:
        return True
    known = [d for d in t._shape.as_list() if d is not None]
    return not known or int(np.prod(known, dtype=np.float64)) <= _MAX_ELEMENTS


def constant_value_as_shape(tensor: Tensor) -> TensorShape:
    """A 1-D int tensor read as a shape: known entries where static, None elsewhere."""
    op = tensor._op
    s = tensor._shape
    if s.rank == 0:
        v = constant_value(tensor)
        if v is not None and int(v) == -1:
            return unknown_shape()
        raise ValueError(f"Shape tensor {tensor.name} must be 1-D, got a scalar")
    if op._type == "Shape":
        return op._inputs[0]._shape
    if op._type == "Pack":
        dims = []
        for t in op._inputs:
            v = constant_value(t)
            dims.append(None if v is None or int(v) < 0 else int(v))
        return TensorShape(dims)
    if op._type == "ConcatV2":
        out = TensorShape([])
        for t in op._inputs[:-1]:
            out = out.concatenate(constant_value_as_shape(t))
        return out
    if op._type == "StridedSlice" and op._inputs[0]._op._type == "Shape":
        base_shape = op._inputs[0]._op._inputs[0]._shape
        b, e, st = (constant_value(op._inputs[i]) for i in (1, 2, 3))
        masks = [
            op._attrs.get(m, 0) for m in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
        ]
        if (
            base_shape.rank is not None
            and b is not None
            and e is not None
            and st is not None
            and not any(masks)
            and b.shape == (1,)
        ):
            begin = None if op._attrs.get("begin_mask", 0) & 1 else int(b[0])
            end = None if op._attrs.get("end_mask", 0) & 1 else int(e[0])
            return TensorShape(base_shape.as_list()[slice(begin, end, int(st[0]))])
    v = constant_value(tensor)
    if v is not None:
        return TensorShape([None if int(d) < 0 else int(d) for d in np.reshape(v, -1)])
    # TF's TensorShape holds at most 254 dims; a longer shape vector (a file's Tile to
    # length 2^30) would otherwise build a tuple of that many unknown dims.
    if s.rank == 1 and s.as_tuple()[0] is not None and s.as_tuple()[0] <= 254:
        return unknown_shape(rank=s.as_tuple()[0])
    return unknown_shape()
