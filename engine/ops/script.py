"""``py_func``: an op that calls a Python function on numpy arrays when it runs.

The function itself never enters the graph: the op carries a token (``pyfunc_<n>``) naming it
in a process-local registry, so a graph holding a ``PyFunc`` op cannot be saved (the op type
is registered ``serializable=False``) and only runs in the process that built it. The graph
keeps the function alive; the registry forgets it when the graph goes away.
"""

from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Operation, Tensor, get_default_graph, name_scope
from engine.framework.registry import Attr, OpFlags, op
from engine.ops._common import create
from engine.tensor_shape import unknown_shape

__all__ = ["py_func"]


class _Callback:
    """Holds a registered function (weakly referenceable, unlike some callables)."""

    __slots__ = ("func", "__weakref__")

    def __init__(self, func):
        self.func = func


_callbacks: weakref.WeakValueDictionary[str, _Callback] = weakref.WeakValueDictionary()
_token_ids = itertools.count()
_lock = threading.Lock()


def _register(graph, func) -> str:
    cb = _Callback(func)
    with _lock:
        token = f"pyfunc_{next(_token_ids)}"
        _callbacks[token] = cb
        # The graph owns the callback: it lives exactly as long as ops that may call it.
        held = getattr(graph, "_py_funcs_used_in_graph", None)
        if held is None:
            held = graph._py_funcs_used_in_graph = []
        held.append(cb)
    return token


def _py_func_infer(o):
    return [(d, unknown_shape()) for d in o._attrs["Tout"]]


def _py_func_bind(o, ctx):
    return {"callback": _callbacks.get(o._attrs["token"])}


def _as_input(x):
    # The function gets numpy values it cannot write through: inputs may be constants or
    # caller-owned feeds. Scalars arrive as numpy scalars, as in TF.
    if x.ndim == 0:
        return x[()]
    view = x.view()
    view.flags.writeable = False
    return view


def _as_output(value, dtype, i: int, token: str) -> np.ndarray:
    if dtype is dtypes.string:
        arr = np.asarray(value, dtype=object)
        out = np.empty(arr.shape, dtype=object)
        flat = out.reshape(-1)
        for j, v in enumerate(arr.reshape(-1)):
            if isinstance(v, str):
                v = v.encode("utf-8")
            elif not isinstance(v, bytes):
                raise errors.InvalidArgumentError(
                    None,
                    None,
                    f"{i}-th value returned by {token} is {type(v).__name__}, but expects string",
                )
            flat[j] = v
        return out
    arr = np.asarray(value)
    want = dtype.np
    if arr.dtype != want:
        # Conversions within a kind (float64 -> float32, int64 -> int32) and widening ones
        # (bool -> int, int -> float) are applied; anything else is the function's error.
        if arr.dtype.kind in "OUS" or not np.can_cast(arr.dtype, want, "same_kind"):
            raise errors.InvalidArgumentError(
                None,
                None,
                f"{i}-th value returned by {token} is "
                f"{_type_name(arr.dtype)}, but expects {dtype.name}",
            )
        arr = arr.astype(want)
    return arr


def _type_name(d: np.dtype) -> str:
    # TF's names in this message: double and float for float64 and float32.
    return {"float64": "double", "float32": "float"}.get(d.name, d.name)


def _py_func_kernel(xp, *inputs, token, Tin, Tout, callback):  # noqa: N803 - TF attr names
    if callback is None:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"callback {token} is not found: the function of a py_func lives only "
            "in the process (and graph) that created it",
        )
    ret = callback.func(*[_as_input(x) for x in inputs])
    if ret is None and not Tout:
        values = []
    elif isinstance(ret, (list, tuple)):
        values = list(ret)
    else:
        values = [ret]
    if len(values) != len(Tout):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"{token} returns {len(values)} values, but expects to see {len(Tout)} values.",
        )
    outs = tuple(_as_output(v, d, i, token) for i, (v, d) in enumerate(zip(values, Tout)))
    if len(outs) == 1:
        return outs[0]
    return outs if outs else None


for _type, _stateful in (("PyFunc", True), ("PyFuncStateless", False)):
    op(
        _type,
        infer=_py_func_infer,
        differentiable=False,
        bind=_py_func_bind,
        inputs=("input*",),
        attrs=(Attr("token", "string"), Attr("Tin", "list(type)"), Attr("Tout", "list(type)")),
        flags=OpFlags(stateful=_stateful, serializable=False, aliases=True, device_types=("CPU",)),
    )(_py_func_kernel)


def py_func(
    func,
    inp,
    Tout,
    stateful=True,  # noqa: N803 - TF's argument name
    name=None,
) -> Tensor | list[Tensor] | Operation:
    """Wraps the Python function ``func`` as an op: ``func(*numpy_inputs)`` runs each time
    the op is on a run's computation path.

    ``Tout`` is one dtype (one output tensor) or a list of dtypes (a list of tensors; an
    empty list returns the op). Output shapes are unknown; results are converted to the
    declared dtypes within a kind (float64 to float32, int64 to int32). Exceptions raised
    by ``func`` become ``OpError``s (ValueError and TypeError: InvalidArgumentError).

    >>> y = py_func(lambda a: np.sort(a), [x], tf.float32)
    """
    single = not isinstance(Tout, (list, tuple))
    tout = (
        [dtypes.as_dtype(Tout).base_dtype]
        if single
        else [dtypes.as_dtype(d).base_dtype for d in Tout]
    )
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    with name_scope(name, op_type, list(inp)) as scope:
        ts = [convert_to_tensor(x) for x in inp]
        token = _register(ts[0].graph if ts else get_default_graph(), func)
        o: Operation = create(
            op_type,
            ts,
            {"token": token, "Tin": [t.dtype.base_dtype for t in ts], "Tout": tout},
            scope,
        )
    if single:
        return o.outputs[0]
    return list(o.outputs) if o.outputs else o
