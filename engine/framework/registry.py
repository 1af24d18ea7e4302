"""The op registry: one entry per op type, with everything about it side by side.

An entry holds the op's static inference function (output dtypes and shapes), its kernel, its
gradient function and flags. Entries are created by the ``@op`` decorator next to the kernel
in the op family files under ``engine/ops``::

    @op("Relu", infer=unary(NUMERIC), grad=_relu_grad)
    def _relu(xp, x):
        return xp.maximum(x, 0)

Kernels are plain functions ``kernel(xp, *inputs, **attrs)`` where ``xp`` is the array module
(numpy or cupy). A kernel returns one array for a single-output op and a tuple of arrays
otherwise; it never mutates its inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "OpDef",
    "op",
    "get",
    "lookup",
    "register_gradient",
    "not_differentiable",
    "registered_types",
    "ShapeError",
]


class ShapeError(ValueError):
    """Raised by inference functions; the graph adds the op's name and input shapes."""


@dataclass
class OpDef:
    type: str
    infer: Callable
    kernel: Callable | None = None
    grad: Callable | None = None
    differentiable: bool = True
    # Stateful ops (variables, random, side effects) are never folded, merged or cached.
    stateful: bool = False
    serializable: bool = True
    # The kernel may return its input (or a view of it) instead of a fresh array.
    aliases: bool = False
    # ``bind(op, ctx) -> dict`` gives session-specific kernel arguments (variable slots, RNGs,
    # sub-plans) when a plan is compiled.
    bind: Callable | None = None
    # Inputs at these positions ("all" for every input) receive variable references.
    ref_inputs: tuple[int, ...] | str = ()
    # The kernel depends only on attrs and session state (constants, variable slots): it runs
    # once when a plan is compiled and its output is stored in the plan.
    hoist: bool = False
    # The op changes a variable's value (assignments, optimizer updates); servers refuse
    # signatures whose computation includes one.
    writes_variables: bool = False
    input_names: tuple[str, ...] = ()
    # Device types with a kernel. "GPU" kernels run the same body with xp=cupy.
    device_types: frozenset[str] = field(default_factory=lambda: frozenset(("CPU", "GPU")))

    def input_name(self, i: int) -> str:
        if i < len(self.input_names):
            return self.input_names[i]
        if self.input_names and self.input_names[-1].endswith("*"):
            return f"{self.input_names[-1][:-1]}[{i - len(self.input_names) + 1}]"
        return f"input {i}"


_REGISTRY: dict[str, OpDef] = {}


def op(
    op_type: str,
    *,
    infer: Callable,
    grad: Callable | None = None,
    differentiable: bool = True,
    stateful: bool = False,
    serializable: bool = True,
    aliases: bool = False,
    bind: Callable | None = None,
    ref_inputs=(),
    hoist: bool = False,
    writes_variables: bool = False,
    inputs: tuple[str, ...] = (),
    device_types=("CPU", "GPU"),
):
    """Decorator registering ``op_type`` with the decorated kernel."""

    def deco(kernel):
        if op_type in _REGISTRY:
            raise KeyError(f"Op type '{op_type}' is already registered")
        _REGISTRY[op_type] = OpDef(
            type=op_type,
            infer=infer,
            kernel=kernel,
            grad=grad,
            differentiable=differentiable,
            stateful=stateful,
            serializable=serializable,
            aliases=aliases,
            bind=bind,
            ref_inputs=ref_inputs if ref_inputs == "all" else tuple(ref_inputs),
            hoist=hoist,
            writes_variables=writes_variables,
            input_names=tuple(inputs),
            device_types=frozenset(device_types),
        )
        return kernel

    return deco


def get(op_type: str) -> OpDef:
    try:
        return _REGISTRY[op_type]
    except KeyError:
        raise ValueError(f"Op type not registered '{op_type}'") from None


def lookup(op_type: str) -> OpDef | None:
    return _REGISTRY.get(op_type)


def registered_types() -> list[str]:
    return sorted(_REGISTRY)


def register_gradient(op_type: str):
    """Decorator attaching a gradient function ``grad(op, *output_grads) -> [input_grads]``."""

    def deco(fn):
        d = get(op_type)
        if d.grad is not None:
            raise KeyError(f"Gradient for op type '{op_type}' is already registered")
        d.grad = fn
        return fn

    return deco


def not_differentiable(op_type: str) -> None:
    """Declares that ``op_type`` has no gradient: its inputs receive None."""
    get(op_type).differentiable = False
