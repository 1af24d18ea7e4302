"""Variable scopes and ``get_variable``: named, shareable variables as in TF1.

``get_variable("w", shape)`` creates ``<scope>/w`` or, in a scope entered with ``reuse=True``
(or ``AUTO_REUSE``), returns the existing one. Variable names depend only on the variable
scope, not on name scopes. ``make_template`` wraps a function so that every call after the
first reuses the variables the first call created.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import re
import threading

from engine import dtypes, init_ops
from engine.framework import graph as ops
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, _defined_at, get_default_graph
from engine.tensor_shape import TensorShape, as_shape
from engine.variables import Variable

__all__ = [
    "AUTO_REUSE",
    "VariableScope",
    "variable_scope",
    "variable_op_scope",
    "get_variable",
    "get_local_variable",
    "get_variable_scope",
    "make_template",
    "Template",
    "no_regularizer",
]


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


def no_regularizer(_):
    """Use as ``regularizer=no_regularizer`` to turn off an inherited regularizer."""
    return None


class VariableScope:
    """The variable scope object: name, reuse mode and defaults for ``get_variable``."""

    def __init__(
        self,
        reuse,
        name="",
        initializer=None,
        regularizer=None,
        caching_device=None,
        partitioner=None,
        custom_getter=None,
        name_scope="",
        dtype=dtypes.float32,
        use_resource=None,
        constraint=None,
    ):
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self) -> None:
        """Turns reuse on for this scope (and scopes opened inside it afterwards)."""
        self._reuse = True

    def set_initializer(self, initializer) -> None:
        self._initializer = initializer

    def set_dtype(self, dtype) -> None:
        self._dtype = dtypes.as_dtype(dtype).base_dtype

    def set_regularizer(self, regularizer) -> None:
        self._regularizer = regularizer

    def set_caching_device(self, caching_device) -> None:
        self._caching_device = caching_device

    def set_custom_getter(self, custom_getter) -> None:
        self._custom_getter = custom_getter

    def set_partitioner(self, partitioner) -> None:
        self._partitioner = partitioner

    def set_use_resource(self, use_resource) -> None:
        self._use_resource = use_resource

    def global_variables(self):
        return ops.get_collection(GraphKeys.GLOBAL_VARIABLES, self._scope_regex())

    def trainable_variables(self):
        return ops.get_collection(GraphKeys.TRAINABLE_VARIABLES, self._scope_regex())

    def local_variables(self):
        return ops.get_collection(GraphKeys.LOCAL_VARIABLES, self._scope_regex())

    def _scope_regex(self):
        return re.escape(self._name + "/") if self._name else None

    def get_variable(
        self,
        var_store,
        name,
        shape=None,
        dtype=None,
        initializer=None,
        regularizer=None,
        reuse=None,
        trainable=None,
        collections=None,
        caching_device=None,
        partitioner=None,
        validate_shape=True,
        use_resource=None,  # noqa: ARG002 - TF API compatibility
        custom_getter=None,
        constraint=None,
        **kwargs,  # noqa: ARG002 - TF API compatibility
    ):
        if regularizer is None:
            regularizer = self._regularizer
        if partitioner is None:
            partitioner = self._partitioner
        if custom_getter is None:
            custom_getter = self._custom_getter
        if reuse is None:
            reuse = self._reuse
        if dtype is None:
            dtype = self._dtype
        if initializer is None:
            initializer = self._initializer
        if constraint is None:
            constraint = self._constraint
        full_name = f"{self._name}/{name}" if self._name else name
        # Variable names depend only on the variable scope: reset the name scope.
        with ops.name_scope(None):
            return var_store.get_variable(
                full_name,
                shape=shape,
                dtype=dtype,
                initializer=initializer,
                regularizer=regularizer,
                reuse=reuse,
                trainable=trainable,
                collections=collections,
                caching_device=caching_device,
                partitioner=partitioner,
                validate_shape=validate_shape,
                custom_getter=custom_getter,
                constraint=constraint,
            )


class _VariableStore:
    """The variables created by ``get_variable`` in one graph, by full name."""

    def __init__(self):
        self._vars: dict = {}
        self._defined_at: dict[str, str] = {}
        self._lock = threading.RLock()

    def get_variable(
        self,
        name,
        shape=None,
        dtype=dtypes.float32,
        initializer=None,
        regularizer=None,
        reuse=None,
        trainable=None,
        collections=None,
        caching_device=None,
        partitioner=None,
        validate_shape=True,
        custom_getter=None,
        constraint=None,
    ):
        if partitioner is not None:
            raise NotImplementedError(
                f"Partitioned variables are not supported (partitioner given for {name})."
            )
        if custom_getter is not None:
            if not callable(custom_getter):
                raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")

            def true_getter(
                name,
                shape=None,
                dtype=dtypes.float32,
                initializer=None,
                regularizer=None,
                reuse=None,
                trainable=None,
                collections=None,
                caching_device=None,  # noqa: ARG001 - TF API compatibility
                partitioner=None,  # noqa: ARG001 - TF API compatibility
                validate_shape=True,
                constraint=None,
                **_,
            ):
                return self._get_single_variable(
                    name,
                    shape,
                    dtype,
                    initializer,
                    regularizer,
                    reuse,
                    trainable,
                    collections,
                    validate_shape,
                    constraint,
                )

            return custom_getter(
                true_getter,
                name,
                shape=shape,
                dtype=dtype,
                initializer=initializer,
                regularizer=regularizer,
                reuse=reuse,
                trainable=trainable,
                collections=collections,
                caching_device=caching_device,
                partitioner=partitioner,
                validate_shape=validate_shape,
                constraint=constraint,
            )
        return self._get_single_variable(
            name,
            shape,
            dtype,
            initializer,
            regularizer,
            reuse,
            trainable,
            collections,
            validate_shape,
            constraint,
        )

    def _get_single_variable(
        self,
        name,
        shape,
        dtype,
        initializer,
        regularizer,
        reuse,
        trainable,
        collections,
        validate_shape,
        constraint,
    ):

        dtype = dtypes.as_dtype(dtype).base_dtype
        init_is_tensor = initializer is not None and not callable(initializer)
        if init_is_tensor:
            initializer = convert_to_tensor(
                initializer, dtype=dtype if dtype != dtypes.float32 else None
            )
            if shape is not None and not as_shape(shape).is_compatible_with(initializer.shape):
                raise ValueError("If initializer is a constant, do not specify shape.")
            dtype = initializer.dtype.base_dtype
            shape = initializer.shape
        shape = as_shape(shape) if shape is not None else TensorShape(None)
        with self._lock:
            found = self._vars.get(name)
            if found is not None:
                if reuse is None or reuse is False:
                    raise ValueError(
                        f"Variable {name} already exists, disallowed. Did you mean to set "
                        "reuse=True or reuse=AUTO_REUSE in VarScope? Originally defined "
                        f"at:\n\n  {self._defined_at.get(name, '')}\n"
                    )
                if not shape.is_compatible_with(found.shape):
                    raise ValueError(
                        f"Trying to share variable {name}, but specified shape "
                        f"{shape} and found shape {found.shape}."
                    )
                if found.dtype.base_dtype is not dtype:
                    raise ValueError(
                        f"Trying to share variable {name}, but specified dtype "
                        f"{dtype.name} and found dtype {found.dtype.name}."
                    )
                return found
            if reuse is True:
                raise ValueError(
                    f"Variable {name} does not exist, or was not created with "
                    "get_variable(). Did you mean to set reuse=AUTO_REUSE in "
                    "VarScope?"
                )
            if not init_is_tensor and not shape.is_fully_defined():
                raise ValueError(
                    f"Shape of a new variable ({name}) must be fully defined, "
                    f"but instead was {shape}."
                )
            if initializer is None:
                initializer, init_is_tensor = _default_initializer(name, dtype), False
            if init_is_tensor:
                init_val = initializer
            else:
                if isinstance(initializer, type):
                    initializer = initializer(dtype=dtype)
                dims = shape.as_list()

                def init_val():
                    return initializer(dims, dtype=dtype, partition_info=None)

            v = Variable(
                initial_value=init_val,
                name=name,
                trainable=trainable,
                collections=collections,
                dtype=dtype,
                validate_shape=validate_shape,
                constraint=constraint,
            )
            self._vars[name] = v
            self._defined_at[name] = _defined_at()
        if regularizer is not None:
            with ops.colocate_with(v.op), ops.name_scope(name + "/Regularizer/"):
                loss = regularizer(v)
            if loss is not None:
                ops.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return v


def _default_initializer(name, dtype):
    if dtype.is_floating:
        return init_ops.GlorotUniform()
    if dtype.is_integer or dtype.is_bool:
        return init_ops.Zeros()
    raise ValueError(f"An initializer for variable {name} of {dtype.name} is required")


# -----------------------------------------------------------------------------------------
# Per-graph scope state
# -----------------------------------------------------------------------------------------


class _ScopeStore(threading.local):
    def __init__(self):
        self.current: VariableScope = VariableScope(False)


def _store_for(graph):
    store = getattr(graph, "_engine_var_store", None)
    if store is None:
        with graph._lock:
            store = getattr(graph, "_engine_var_store", None)
            if store is None:
                store = (_VariableStore(), _ScopeStore(), {})
                graph._engine_var_store = store
    return store


def _var_store() -> _VariableStore:
    return _store_for(get_default_graph())[0]


def get_variable_scope() -> VariableScope:
    """The current variable scope of the default graph."""
    return _store_for(get_default_graph())[1].current


def _unique_scope_name(prefix: str) -> str:
    counts = _store_for(get_default_graph())[2]
    current = get_variable_scope().name
    base = f"{current}/{prefix}" if current else prefix
    if counts.get(base, 0) == 0:
        return prefix
    i = 1
    while counts.get(f"{base}_{i}", 0) > 0:
        i += 1
    return f"{prefix}_{i}"


@contextlib.contextmanager
def variable_scope(
    name_or_scope,
    default_name=None,
    values=None,
    initializer=None,
    regularizer=None,
    caching_device=None,
    partitioner=None,
    custom_getter=None,
    reuse=None,
    dtype=None,
    use_resource=None,
    constraint=None,
    auxiliary_name_scope=True,
):
    """Opens a variable scope (and a name scope) for ``get_variable``.

    ``reuse=True`` requires variables to exist; ``AUTO_REUSE`` creates them when missing;
    ``None`` inherits the parent's mode. Re-entering a ``VariableScope`` object reuses its
    original name scope.
    """
    if default_name is None and name_or_scope is None:
        raise TypeError("If default_name is None then name_or_scope is required")
    if reuse is False:
        reuse = None
    if not (reuse is None or reuse is True or reuse is AUTO_REUSE):
        raise ValueError(
            f"The reuse parameter must be True or False or None or AUTO_REUSE, got {reuse!r}"
        )
    graph = ops._get_graph_from_inputs(values) if values else get_default_graph()
    with graph.as_default():
        _, scopes, counts = _store_for(graph)
        parent = scopes.current
        if isinstance(name_or_scope, VariableScope):
            target = name_or_scope
            full_name = target.name
            ns_cm = (
                ops.name_scope(target.original_name_scope)
                if auxiliary_name_scope
                else contextlib.nullcontext(target.original_name_scope)
            )
            base_scope = target
        else:
            if name_or_scope is not None:
                if not isinstance(name_or_scope, str):
                    raise TypeError(
                        f"VariableScope: name_or_scope must be a string or "
                        f"VariableScope, got {type(name_or_scope).__name__}"
                    )
                short = name_or_scope
            else:
                short = _unique_scope_name(default_name)
            full_name = f"{parent.name}/{short}" if parent.name else short
            ns_cm = (
                ops.name_scope(short)
                if auxiliary_name_scope
                else contextlib.nullcontext(ops.get_name_scope() + "/")
            )
            base_scope = parent
        counts[full_name] = counts.get(full_name, 0) + 1
        saved_counts = dict(counts) if isinstance(name_or_scope, VariableScope) else None
        if isinstance(name_or_scope, VariableScope):
            new_reuse = reuse if reuse else name_or_scope.reuse
        else:
            new_reuse = reuse or parent.reuse  # reuse is inherited by sub-scopes
        with ns_cm as ns:
            scope = VariableScope(
                new_reuse,
                name=full_name,
                initializer=initializer if initializer is not None else base_scope.initializer,
                regularizer=regularizer if regularizer is not None else base_scope.regularizer,
                caching_device=caching_device
                if caching_device is not None
                else base_scope.caching_device,
                partitioner=partitioner if partitioner is not None else base_scope.partitioner,
                custom_getter=_compose_getters(custom_getter, base_scope.custom_getter),
                name_scope=ns if isinstance(ns, str) else "",
                dtype=dtype if dtype is not None else base_scope.dtype,
                use_resource=use_resource,
                constraint=constraint if constraint is not None else base_scope.constraint,
            )
            if isinstance(name_or_scope, VariableScope):
                scope._name_scope = name_or_scope.original_name_scope
            scopes.current = scope
            try:
                yield scope
            finally:
                scopes.current = parent
                # As TF: leaving a scope forgets which default names its sub-scopes used,
                # so re-entering it (reuse=True) names layers conv2d, conv2d_1, ... again.
                if saved_counts is not None:
                    counts.clear()
                    counts.update(saved_counts)
                else:
                    for k in [k for k in counts if k.startswith(full_name + "/")]:
                        counts[k] = 0


def _compose_getters(inner, outer):
    if inner is None:
        return outer
    if outer is None:
        return inner

    def composed(getter, *args, **kwargs):
        return inner(lambda *a, **k: outer(getter, *a, **k), *args, **kwargs)

    return composed


def variable_op_scope(values, name_or_scope, default_name=None, **kwargs):
    return variable_scope(name_or_scope, default_name=default_name, values=values, **kwargs)


def get_variable(
    name,
    shape=None,
    dtype=None,
    initializer=None,
    regularizer=None,
    trainable=None,
    collections=None,
    caching_device=None,
    partitioner=None,
    validate_shape=True,
    use_resource=None,  # noqa: ARG001 - TF API compatibility
    custom_getter=None,
    constraint=None,
    **kwargs,  # noqa: ARG001 - TF API compatibility
):
    """Gets an existing variable ``<scope>/name`` or creates it (per the scope's reuse).

    The default initializer is glorot_uniform for floats and zeros for ints and bools.
    """
    return get_variable_scope().get_variable(
        _var_store(),
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=collections,
        caching_device=caching_device,
        partitioner=partitioner,
        validate_shape=validate_shape,
        custom_getter=custom_getter,
        constraint=constraint,
    )


def get_local_variable(
    name,
    shape=None,
    dtype=None,
    initializer=None,
    regularizer=None,
    trainable=False,
    collections=None,
    **kwargs,
):
    collections = list(collections or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=collections,
        **kwargs,
    )


# -----------------------------------------------------------------------------------------
# Templates
# -----------------------------------------------------------------------------------------


class Template:
    """A function whose variables are created on the first call and shared afterwards."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None, custom_getter=None):
        self._func = func
        self._name = name
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._variables_created = False
        self._variable_scope = None
        if create_scope_now:
            with variable_scope(unique_name, name, custom_getter=custom_getter) as vs:
                self._variable_scope = vs

    def _call(self, args, kwargs, check_new):
        graph = get_default_graph()
        before = len(graph.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        after = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
        if check_new and len(after) > before:
            raise ValueError(
                "Trainable variable created when calling a template after the "
                "first time, perhaps you used Variable when you meant "
                f"get_variable: {[v.name for v in after[before:]]}"
            )
        self._variables_created = True
        return result

    def __call__(self, *args, **kwargs):
        if self._variable_scope is not None:
            if self._variables_created:
                with variable_scope(self._variable_scope, reuse=True):
                    return self._call(args, kwargs, True)
            with variable_scope(self._variable_scope):
                return self._call(args, kwargs, False)
        with variable_scope(self._unique_name, self._name, custom_getter=self._custom_getter) as vs:
            self._variable_scope = vs
            return self._call(args, kwargs, False)

    @property
    def name(self):
        return self._name

    @property
    def variable_scope(self):
        return self._variable_scope

    @property
    def variable_scope_name(self):
        return self._variable_scope.name if self._variable_scope else None

    @property
    def trainable_variables(self):
        return self._variable_scope.trainable_variables() if self._variable_scope else []

    @property
    def global_variables(self):
        return self._variable_scope.global_variables() if self._variable_scope else []

    variables = global_variables


def make_template(
    name_, func_, create_scope_now_=False, unique_name_=None, custom_getter_=None, **kwargs
):
    """Wraps ``func_`` so all calls share the variables made by the first call."""

    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(
        name_,
        func_,
        create_scope_now=create_scope_now_,
        unique_name=unique_name_,
        custom_getter=custom_getter_,
    )
