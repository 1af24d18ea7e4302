"""State ops: variable storage and assignment.

A ``VariableV2`` op yields a reference (``float32_ref``) to storage that lives in each
``Session``; ops taking a reference input (``Assign``, ``AssignAdd``, ...) write it, and any
other consumer reads the current value. Stored arrays are never mutated in place by readers.
"""

from __future__ import annotations

import threading

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import Tensor, get_default_graph, name_scope
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import INDEX, check_dtype, create
from engine.tensor_shape import TensorShape, as_shape, unknown_shape


def _variable_infer(o):
    shape = o._attrs["shape"]
    return [(o._attrs["dtype"]._as_ref, shape if shape is not None else unknown_shape())]


def _slot_bind(o, ctx):
    return {"slot": ctx.variable_slot()}


@op(
    "VariableV2",
    infer=_variable_infer,
    attrs=(
        Attr("shape", "shape"),
        Attr("dtype", "type"),
        Attr("container", "string"),
        Attr("shared_name", "string"),
    ),
    bind=_slot_bind,
    differentiable=False,
    flags=OpFlags(stateful=True, hoist=True),
)
def _variable_kernel(xp, *, shape, dtype, container, shared_name, slot):
    return slot


def variable_op_v2(shape, dtype, name="Variable", container="", shared_name=""):
    """Creates the storage op of a variable (a reference tensor)."""
    return create(
        "VariableV2",
        [],
        {
            "shape": as_shape(shape) if shape is not None else unknown_shape(),
            "dtype": dtypes.as_dtype(dtype).base_dtype,
            "container": container,
            "shared_name": shared_name,
        },
        name,
    ).outputs[0]


def _check_ref(o, what):
    ref = o._inputs[0]
    if not ref._dtype._is_ref:
        raise TypeError(
            f"'{what}' Op requires that input 'ref' be a mutable tensor (e.g. a "
            f"Variable); {ref.name} has dtype {ref._dtype.name}"
        )
    value = o._inputs[1]
    if value._dtype.base_dtype is not ref._dtype.base_dtype:
        raise TypeError(
            f"Input 'value' of '{what}' Op has type {value._dtype.base_dtype.name} "
            f"that does not match type {ref._dtype.base_dtype.name} of argument "
            "'ref'."
        )
    return ref, value


def _assign_infer(o):
    ref, value = _check_ref(o, "Assign")
    if o._attrs["validate_shape"]:
        if not ref._shape.is_compatible_with(value._shape):
            raise ShapeError(f"Shapes {ref._shape} and {value._shape} are incompatible")
        return [(ref._dtype, ref._shape.merge_with(value._shape))]
    return [(ref._dtype, value._shape)]


def _assign_bind(o, ctx):
    # Store a private copy when the value may alias memory we do not own.
    return {"copy": ctx.input_persistent[1]}


def _check_declared(slot, value, op_name):
    declared = slot.shape
    if declared is not None and not declared.is_compatible_with(value.shape):
        raise errors.InvalidArgumentError(
            None,
            None,
            f"Assign requires shapes of both tensors to match. lhs shape= "
            f"{declared._short()} rhs shape= {list(value.shape)}",
        )


@op(
    "Assign",
    infer=_assign_infer,
    bind=_assign_bind,
    differentiable=False,
    inputs=("ref", "value"),
    attrs=(
        Attr("validate_shape", "bool"),
        Attr("use_locking", "bool"),
    ),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0,)),
)
def _assign_kernel(xp, ref, value, *, validate_shape, use_locking, copy):
    if validate_shape:
        current = ref.value
        if current is not None and current.shape != value.shape:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Assign requires shapes of both tensors to match. lhs shape= "
                f"{list(current.shape)} rhs shape= {list(value.shape)}",
            )
        _check_declared(ref, value, "")
    ref.value = value.copy() if copy else value
    return ref


def _update_infer(what):
    def infer(o):
        ref, value = _check_ref(o, what)
        if not ref._shape.is_compatible_with(value._shape):
            raise ShapeError(f"Shapes {ref._shape} and {value._shape} are incompatible")
        return [(ref._dtype, ref._shape)]

    return infer


def _update_kernel(fn):
    def kernel(xp, ref, value, *, use_locking):
        current = ref.read()
        if current.shape != value.shape:
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Update requires shapes of both tensors to match. lhs shape= "
                f"{list(current.shape)} rhs shape= {list(value.shape)}",
            )
        # A new array: readers of the old value in flight keep a consistent snapshot.
        ref.value = fn(current, value)
        return ref

    return kernel


op(
    "AssignAdd",
    infer=_update_infer("AssignAdd"),
    differentiable=False,
    inputs=("ref", "value"),
    attrs=(Attr("use_locking", "bool"),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0,)),
)(_update_kernel(lambda a, b: a + b))
op(
    "AssignSub",
    infer=_update_infer("AssignSub"),
    differentiable=False,
    inputs=("ref", "value"),
    attrs=(Attr("use_locking", "bool"),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0,)),
)(_update_kernel(lambda a, b: a - b))


def _count_up_to_infer(o):
    ref = o._inputs[0]
    if not ref._dtype._is_ref:
        raise TypeError(
            "'CountUpTo' Op requires that input 'ref' be a mutable tensor (e.g. a Variable); "
            f"{ref.name} has dtype {ref._dtype.name}"
        )
    dtype = check_dtype(o, 0, INDEX)
    if ref._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {ref._shape.rank}")
    return [(dtype, TensorShape([]))]


# One lock for every counter: a read-compare-increment must not interleave with another
# run's (queue runner threads share the ``epochs`` counter of ``limit_epochs``).
_COUNT_UP_TO_LOCK = threading.Lock()


@op(
    "CountUpTo",
    infer=_count_up_to_infer,
    differentiable=False,
    inputs=("ref",),
    attrs=(Attr("limit", "int"),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0,)),
)
def _count_up_to_kernel(xp, ref, *, limit):
    with _COUNT_UP_TO_LOCK:
        current = ref.read()
        if current.shape != ():
            raise errors.InvalidArgumentError(
                None, None, f"input is not a scalar: {list(current.shape)}"
            )
        if int(current) >= limit:
            raise errors.OutOfRangeError(None, None, f"Reached limit of {limit}")
        ref.value = xp.asarray(current + 1, dtype=current.dtype)
    return xp.array(current, copy=True)


def count_up_to(ref, limit, name=None):
    """Increments the int32/int64 scalar variable ``ref`` (TF1's ``tf.count_up_to``); evaluates
    to its value before the increment, or raises ``OutOfRangeError`` once it has reached
    ``limit``. Concurrent runs each see a different value.

    >>> step = Variable(0, name="step")
    >>> next_step = count_up_to(step, 3)   # 0, 1, 2, then OutOfRangeError
    """
    r = _ref_of(ref)
    return create("CountUpTo", [r], {"limit": int(limit)}, name).outputs[0]


def _ref_of(ref):
    if isinstance(ref, Tensor):
        return ref
    if hasattr(ref, "_ref"):
        return ref._ref()
    raise TypeError(f"Expected a Variable or reference Tensor, got {type(ref).__name__}")


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """Assigns ``value`` to the variable ``ref``; returns the variable's reference tensor."""
    if hasattr(ref, "assign") and not isinstance(ref, Tensor):
        return ref.assign(value, use_locking=use_locking, name=name, validate_shape=validate_shape)

    r = _ref_of(ref)
    with name_scope(name, "Assign", [r, value]) as scope:
        v = convert_to_tensor(value, dtype=r.dtype.base_dtype, name="value")
        return create(
            "Assign",
            [r, v],
            {
                "validate_shape": True if validate_shape is None else bool(validate_shape),
                "use_locking": True if use_locking is None else bool(use_locking),
            },
            scope,
        ).outputs[0]


def _update(op_type, ref, value, use_locking, name):
    r = _ref_of(ref)
    with name_scope(name, op_type, [r, value]) as scope:
        v = convert_to_tensor(value, dtype=r.dtype.base_dtype, name="value")
        return create(op_type, [r, v], {"use_locking": bool(use_locking)}, scope).outputs[0]


def assign_add(ref, value, use_locking=None, name=None):
    """Adds ``value`` to the variable ``ref``; returns the reference tensor."""
    return _update("AssignAdd", ref, value, use_locking, name)


def assign_sub(ref, value, use_locking=None, name=None):
    """Subtracts ``value`` from the variable ``ref``; returns the reference tensor."""
    return _update("AssignSub", ref, value, use_locking, name)


def _is_init_infer(o):
    if not o._inputs[0]._dtype._is_ref:
        raise TypeError("is_variable_initialized requires a variable (reference) input")
    return [(dtypes.bool, TensorShape([]))]


@op(
    "IsVariableInitialized",
    infer=_is_init_infer,
    differentiable=False,
    inputs=("ref",),
    attrs=(Attr("dtype", "type"),),
    flags=OpFlags(stateful=True, ref_inputs=(0,)),
)
def _is_initialized_kernel(xp, ref, *, dtype):
    return xp.asarray(ref.value is not None)


def is_variable_initialized(variable, name=None):
    """A bool scalar: has ``variable`` been assigned in the running session?"""
    r = _ref_of(variable)
    with name_scope(name, "IsVariableInitialized", [r]) as scope:
        return create("IsVariableInitialized", [r], {"dtype": r.dtype.base_dtype}, scope).outputs[0]


def _report_infer(o):
    for t in o._inputs:
        if not t._dtype._is_ref:
            raise TypeError("report_uninitialized_variables requires variable inputs")
    return [(dtypes.string, TensorShape([None]))]


@op(
    "ReportUninitializedVariables",
    infer=_report_infer,
    differentiable=False,
    inputs=("refs*",),
    attrs=(Attr("names", "list(string)"),),
    flags=OpFlags(stateful=True, ref_inputs="all"),
)
def _report_kernel(xp, *refs, names):
    out = [n.encode() for n, r in zip(names, refs) if r.value is None]
    arr = np.empty(len(out), dtype=object)
    arr[:] = out
    return arr


def report_uninitialized_variables(var_list, name="report_uninitialized_variables"):
    """A 1-D string tensor of the names of the variables of ``var_list`` not yet initialized
    (``tf.report_uninitialized_variables`` in ``engine.variables`` defaults the list)."""
    refs = [_ref_of(v) for v in var_list]
    g = refs[0].graph if refs else get_default_graph()
    with g.as_default(), name_scope(name) as scope:
        if not refs:
            return constant(np.array([], dtype=object), dtype=dtypes.string, name=scope)
        return create(
            "ReportUninitializedVariables", refs, {"names": [r.op.name for r in refs]}, scope
        ).outputs[0]
