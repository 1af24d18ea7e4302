"""The op registry: one entry per op type, with everything about it side by side.

An entry holds the op's static inference function (output dtypes and shapes), its declared
attributes, its kernel, its gradient and its runtime flags. Entries are created by the ``@op``
decorator next to the kernel in the op family files under ``engine/ops``::

    from engine.framework.registry import Attr, OpFlags, op

    @op(
        "Cast",
        infer=_cast_infer,
        inputs=("x",),
        attrs=(Attr("DstT", "type"), Attr("Truncate", "bool", default=False)),
        grad=_cast_grad,
        flags=OpFlags(aliases=True),
    )
    def _cast_kernel(xp, x, *, DstT, Truncate=False):
        ...

**Attributes** are declared as TensorFlow's op registry does: a name, a type and an optional
default (``Attr(name, type, default=...)``). Types: ``int``, ``float`` (ints accepted),
``bool``, ``string``, ``type`` (a ``DType``), ``shape`` (a ``TensorShape``), ``tensor`` (an
ndarray), ``func`` (a function graph), and ``list(T)`` of the scalar ones; a trailing ``?``
(``"int?"``, ``"shape?"``) also admits ``None``. The declaration is the op's contract: creating
an op checks the attrs given against it (unknown names, missing required ones, values of the
wrong type raise ``TypeError``) and fills in declared defaults, and the graph serializer and
importers read it to validate files. Names starting with ``_`` (``_class``,
``_gradient_op_type``) are graph annotations, never declared and never passed to the kernel.

**Kernels** are plain functions ``kernel(xp, *inputs, **attrs)`` where ``xp`` is the array
module (numpy or cupy); every declared attr arrives as a keyword argument (declare them
keyword-only, with the same defaults). A kernel returns one array for a single-output op and
a tuple of arrays otherwise; it never mutates its inputs. Keyword arguments a session supplies
when it compiles a plan (variable slots, RNGs, compiled branches) come from the op's ``bind``
hook and are not attrs. ``tests/engine/test_registry.py`` checks every declaration against its
kernel's keywords.

**Runtime flags** (``OpFlags``) tell the session and the graph passes how to treat the op:
stateful, serializable, aliasing its inputs, hoisted to compile time, writing variables,
which inputs are variable references, and which device types have a kernel.

**Gradients** live in one registry of named gradient functions ``grad(op, *output_grads) ->
[input_grads]``, with TensorFlow's semantics: ``@op(..., grad=fn)`` registers ``fn`` under the
op's type and ``differentiable=False`` registers "no gradient" (its inputs get None);
``tf.RegisterGradient(name)`` adds a gradient under a new name and raises ``KeyError`` for a
name already registered, built-in op types included. To use another gradient for some ops,
register it under a new name and create those ops inside
``Graph.gradient_override_map({"OpType": "name"})``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engine import dtypes
from engine.tensor_shape import TensorShape

__all__ = [
    "Attr",
    "OpDef",
    "OpFlags",
    "op",
    "get",
    "lookup",
    "not_differentiable",
    "add_gradient",
    "gradient",
    "has_gradient",
    "registered_types",
    "ShapeError",
    "ATTR_TYPES",
]


class ShapeError(ValueError):
    """Raised by inference functions; the graph adds the op's name and input shapes."""


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_func(v) -> bool:
    return getattr(v, "_is_function_graph", False)


# Attr type -> (check of a Python value, serialized kinds (graph_def encoding tags)).
_SCALAR_TYPES: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "int": (_is_int, ("i",)),
    "float": (lambda v: isinstance(v, float) or _is_int(v), ("f", "i")),
    "bool": (lambda v: isinstance(v, bool), ("b",)),
    "string": (lambda v: isinstance(v, str), ("s",)),
    "type": (lambda v: isinstance(v, dtypes.DType), ("dtype",)),
    "shape": (lambda v: isinstance(v, TensorShape), ("shape",)),
    "tensor": (lambda v: isinstance(v, np.ndarray), ("tensor",)),
    "func": (_is_func, ("func",)),
}
_LISTABLE = ("int", "float", "bool", "string", "type", "shape")
ATTR_TYPES = frozenset(
    [*_SCALAR_TYPES, *(f"list({t})" for t in _LISTABLE)]
    + [f"{t}?" for t in (*_SCALAR_TYPES, *(f"list({t})" for t in _LISTABLE))]
)
_LIST_TYPE = re.compile(r"list\((\w+)\)")


class _Required:
    """The default of an attr that has none (it must be given)."""

    def __repr__(self) -> str:
        return "REQUIRED"


_REQUIRED = _Required()


@dataclass(frozen=True)
class Attr:
    """A declared op attribute: ``Attr("axis", "int", default=0)``; see the module docstring
    for the types. Without a default the attr is required."""

    name: str
    type: str
    default: object = _REQUIRED

    def __post_init__(self):
        if self.type not in ATTR_TYPES:
            raise ValueError(
                f"Attr '{self.name}' has unknown type '{self.type}' "
                f"(expected one of {', '.join(sorted(ATTR_TYPES))})"
            )
        if self.name.startswith("_") or not self.name.isidentifier():
            raise ValueError(f"'{self.name}' is not a valid attr name")
        if self.default is not _REQUIRED and not self.accepts(self.default):
            raise ValueError(f"Default {self.default!r} of attr '{self.name}' is not a {self.type}")

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    @property
    def nullable(self) -> bool:
        return self.type.endswith("?")

    def _element(self) -> tuple[str | None, str]:
        """(list element type or None for a scalar attr, scalar type)."""
        t = self.type.rstrip("?")
        m = _LIST_TYPE.fullmatch(t)
        return (m.group(1), m.group(1)) if m else (None, t)

    def accepts(self, value) -> bool:
        """Is ``value`` (as stored on an op) of this attr's type?"""
        if value is None:
            return self.nullable
        elem, scalar = self._element()
        check = _SCALAR_TYPES[scalar][0]
        if elem is None:
            return check(value)
        return isinstance(value, (list, tuple)) and all(check(v) for v in value)

    def serialized_kinds(self) -> tuple[str, ...]:
        """The encoding tags a serialized value of this attr may carry."""
        elem, scalar = self._element()
        kinds = ("list",) if elem is not None else _SCALAR_TYPES[scalar][1]
        return (*kinds, "none") if self.nullable else kinds

    def element_kinds(self) -> tuple[str, ...] | None:
        """For a list attr, the encoding tags its elements may carry."""
        elem, scalar = self._element()
        return None if elem is None else _SCALAR_TYPES[scalar][1]


@dataclass(frozen=True)
class OpFlags:
    """How the session and the graph passes treat an op (all off by default)."""

    # Stateful ops (variables, random, side effects) are never folded, merged or cached.
    stateful: bool = False
    # False for ops that run Python code of this process: never written to or read from files.
    serializable: bool = True
    # The kernel may return its input (or a view of it) instead of a fresh array.
    aliases: bool = False
    # Inputs at these positions ("all" for every input) receive variable references.
    ref_inputs: tuple[int, ...] | str = ()
    # The kernel depends only on attrs and session state (constants, variable slots): it runs
    # once when a plan is compiled and its output is stored in the plan.
    hoist: bool = False
    # The op changes a variable's value (assignments, optimizer updates); servers refuse
    # signatures whose computation includes one.
    writes_variables: bool = False
    # Device types with a kernel. "GPU" kernels run the same body with xp=cupy.
    device_types: frozenset[str] = frozenset(("CPU", "GPU"))
    # Inputs at these positions (negative: from the end) are read on the host wherever the
    # op runs (TF's HostMemory: shapes, axes, sizes): a kernel on a GPU gets them as numpy
    # arrays, so reading them never waits for the device.
    host_inputs: tuple[int, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "host_inputs", tuple(self.host_inputs))
        if self.ref_inputs != "all":
            object.__setattr__(self, "ref_inputs", tuple(self.ref_inputs))
        object.__setattr__(self, "device_types", frozenset(self.device_types))


_DEFAULT_FLAGS = OpFlags()


@dataclass
class OpDef:
    type: str
    infer: Callable
    kernel: Callable | None = None
    # ``bind(op, ctx) -> dict`` gives session-specific kernel arguments (variable slots, RNGs,
    # sub-plans) when a plan is compiled.
    bind: Callable | None = None
    attrs: tuple[Attr, ...] = ()
    input_names: tuple[str, ...] = ()
    flags: OpFlags = _DEFAULT_FLAGS
    attr_by_name: dict[str, Attr] = field(init=False, repr=False)

    def __post_init__(self):
        self.attr_by_name = {a.name: a for a in self.attrs}
        if len(self.attr_by_name) != len(self.attrs):
            raise ValueError(f"Op type '{self.type}' declares an attr twice")

    def input_name(self, i: int) -> str:
        if i < len(self.input_names):
            return self.input_names[i]
        if self.input_names and self.input_names[-1].endswith("*"):
            return f"{self.input_names[-1][:-1]}[{i - len(self.input_names) + 1}]"
        return f"input {i}"

    def check_attrs(self, op_name: str, attrs: dict) -> None:
        """Checks ``attrs`` (of an op being created) against the declaration, in place: fills
        declared defaults; TypeError for an unknown, missing or mistyped attr."""
        declared = self.attr_by_name
        for k, v in attrs.items():
            if k[:1] == "_":
                continue
            a = declared.get(k)
            if a is None:
                names = ", ".join(declared) or "none"
                raise TypeError(
                    f"Op '{op_name}' of type {self.type} has no attr '{k}' (declared: {names})"
                )
            if not a.accepts(v):
                raise TypeError(
                    f"Attr '{k}' of op '{op_name}' ({self.type}) must be a {a.type}, "
                    f"got {type(v).__name__} {v!r:.80}"
                )
        if len(attrs) < len(declared) or any(k not in attrs for k in declared):
            for a in self.attrs:
                if a.name in attrs:
                    continue
                if a.required:
                    raise TypeError(f"Op '{op_name}' of type {self.type} lacks the attr '{a.name}'")
                attrs[a.name] = a.default


_REGISTRY: dict[str, OpDef] = {}


def op(
    op_type: str,
    *,
    infer: Callable,
    attrs: tuple[Attr, ...] = (),
    inputs: tuple[str, ...] = (),
    grad: Callable | None = None,
    differentiable: bool = True,
    bind: Callable | None = None,
    flags: OpFlags = _DEFAULT_FLAGS,
):
    """Decorator registering ``op_type`` with the decorated kernel.

    ``infer(op) -> [(dtype, shape), ...]`` gives the outputs; ``attrs`` declares the op's
    attributes; ``inputs`` names the inputs for error messages (a last name ending in ``*``
    names a variable number of them); ``grad`` or ``differentiable=False`` decide its gradient;
    ``bind`` supplies session state to the kernel; ``flags`` are its runtime flags.
    """

    def deco(kernel):
        if op_type in _REGISTRY:
            raise KeyError(f"Op type '{op_type}' is already registered")
        if grad is not None and not differentiable:
            raise ValueError(f"Op type '{op_type}' has a gradient and differentiable=False")
        if grad is not None or not differentiable:
            add_gradient(op_type, grad)
        _REGISTRY[op_type] = OpDef(
            type=op_type,
            infer=infer,
            kernel=kernel,
            bind=bind,
            attrs=tuple(attrs),
            input_names=tuple(inputs),
            flags=flags,
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


# Gradient name (an op type, or a name for ``Graph.gradient_override_map``) -> gradient
# function, or None for "not differentiable".
_GRADIENTS: dict[str, Callable | None] = {}


def add_gradient(name: str, fn: Callable | None) -> None:
    """Registers ``fn`` as the gradient named ``name`` (None: not differentiable). A name is
    registered once: KeyError otherwise, as in TensorFlow."""
    if not isinstance(name, str):
        raise TypeError(f"A gradient name must be a string, got {type(name).__name__}")
    if name in _GRADIENTS:
        raise KeyError(
            f"Registering two gradient with name '{name}'! To use another gradient for some "
            "ops, register it under a new name and map their op type to it with "
            "Graph.gradient_override_map."
        )
    _GRADIENTS[name] = fn


def has_gradient(name: str) -> bool:
    """Is a gradient (or "not differentiable") registered as ``name``?"""
    return name in _GRADIENTS


def gradient(name: str) -> Callable | None:
    """The gradient function registered as ``name``; None when it is declared not
    differentiable. LookupError when nothing is registered under ``name``."""
    try:
        return _GRADIENTS[name]
    except KeyError:
        raise LookupError(f"No gradient registered as '{name}'") from None


def not_differentiable(op_type: str) -> None:
    """Declares that ``op_type`` has no gradient: its inputs receive None (TF's
    ``NotDifferentiable``; KeyError when ``op_type`` already has a gradient)."""
    add_gradient(op_type, None)
