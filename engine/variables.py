"""Variables: graph handles to values that live in each Session (TF1 reference variables).

A ``Variable`` named ``w`` creates the ops ``w`` (VariableV2, the storage), ``w/Assign`` (its
initializer), ``w/read`` (the snapshot used when the variable is used as a tensor) and, for a
value given directly, ``w/initial_value``. Two sessions on one graph hold independent values.
"""

from __future__ import annotations

from engine import dtypes
from engine.framework import graph as ops
from engine.framework.constant_op import convert_to_tensor, register_tensor_conversion_function
from engine.framework.graph import GraphKeys, Tensor, name_scope, session_for
from engine.ops import array as array_ops
from engine.ops import control_flow as cf
from engine.ops import logging_ops
from engine.ops import math as math_ops
from engine.ops import state as state_ops
from engine.ops._common import create
from engine.ops.control_flow import group, no_op
from engine.tensor_shape import as_shape, unknown_shape

__all__ = [
    "Variable",
    "global_variables",
    "trainable_variables",
    "local_variables",
    "model_variables",
    "moving_average_variables",
    "all_variables",
    "global_variables_initializer",
    "local_variables_initializer",
    "variables_initializer",
    "initialize_all_variables",
    "initialize_variables",
    "initialize_local_variables",
    "is_variable_initialized",
    "report_uninitialized_variables",
    "assert_variables_initialized",
    "is_tensor",
]


class Variable:
    """A tensor-like handle to mutable state that persists across ``Session.run`` calls.

    >>> w = Variable(3.0, name="w")
    >>> with Session() as sess:
    ...     sess.run(w.initializer)
    ...     sess.run(w.assign_add(1.0))
    4.0
    """

    # Make numpy defer to our reflected operators.
    __array_priority__ = 100

    def __init__(
        self,
        initial_value=None,
        trainable=None,
        collections=None,
        validate_shape=True,
        caching_device=None,  # noqa: ARG002 - TF API compatibility
        name=None,
        variable_def=None,
        dtype=None,
        expected_shape=None,  # noqa: ARG002 - TF API compatibility
        import_scope=None,  # noqa: ARG002 - TF API compatibility
        constraint=None,
        use_resource=None,  # noqa: ARG002 - TF API compatibility
        synchronization=None,  # noqa: ARG002 - TF API compatibility
        aggregation=None,  # noqa: ARG002 - TF API compatibility
        shape=None,
    ):
        if variable_def is not None:
            raise NotImplementedError(
                "Variable(variable_def=...) is not supported; import "
                "the graph and use get_tensor_by_name instead."
            )
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if trainable is None:
            trainable = True
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(
                f"collections argument to Variable constructor must be a list, "
                f"tuple, or set. Got {collections} of type {type(collections)}"
            )
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        if ops.get_default_graph()._is_function_graph:
            raise ValueError(
                "Variables cannot be created inside a cond branch or a while_loop "
                "body; create them outside and use them inside."
            )
        init_from_fn = callable(initial_value)
        self._trainable = bool(trainable)
        self._constraint = constraint
        self._save_slice_info = None
        if dtype is not None:
            dtype = dtypes.as_dtype(dtype).base_dtype
        values = [] if init_from_fn else [initial_value]
        with ops.control_dependencies(None), name_scope(name, "Variable", values) as scope:
            if init_from_fn:
                with name_scope("Initializer"), ops.device(None):
                    init = initial_value()
                    self._initial_value = convert_to_tensor(init, name="initial_value", dtype=dtype)
            else:
                self._initial_value = convert_to_tensor(
                    initial_value, name="initial_value", dtype=dtype
                )
            if shape is not None:
                var_shape = as_shape(shape)
            elif validate_shape:
                var_shape = self._initial_value.shape
            else:
                var_shape = unknown_shape()
            if validate_shape and not var_shape.is_fully_defined():
                raise ValueError(
                    f"initial_value must have a shape specified: {self._initial_value}"
                )
            self._variable = state_ops.variable_op_v2(
                var_shape, self._initial_value.dtype.base_dtype, name=scope
            )
            self._initializer_op = state_ops.assign(
                self._variable, self._initial_value, validate_shape=validate_shape, name="Assign"
            ).op
            with ops.colocate_with(self._variable.op):
                self._snapshot = array_ops.identity(self._variable, name="read")
        self._graph = self._variable.graph
        g = self._graph
        for key in collections:
            g.add_to_collection(key, self)

    @classmethod
    def _from_graph(cls, graph, name, initializer, snapshot, initial_value, trainable):
        """The Variable whose ops (already in ``graph``) have these names (for imports)."""
        v = cls.__new__(cls)
        v._variable = graph.get_tensor_by_name(name + ":0")
        if v._variable.op.type != "VariableV2":
            raise ValueError(f"{name} is a {v._variable.op.type} op, not a variable")
        v._initializer_op = graph.get_operation_by_name(initializer)
        v._snapshot = graph.get_tensor_by_name(snapshot)
        v._initial_value = graph.get_tensor_by_name(initial_value)
        v._trainable = trainable
        v._constraint = None
        v._save_slice_info = None
        v._graph = graph
        return v

    # -- graph element ----------------------------------------------------------------------
    def _as_graph_element(self) -> Tensor:
        return self._variable

    def _ref(self) -> Tensor:
        return self._variable

    def value(self) -> Tensor:
        """The snapshot tensor ``<name>/read`` (reads the current value)."""
        return self._snapshot

    def _graph_element_value(self) -> Tensor:
        return self._snapshot

    def read_value(self) -> Tensor:
        """A new read of the variable (useful under control dependencies)."""
        return array_ops.identity(self._variable, name="read")

    def initialized_value(self) -> Tensor:
        """The variable's value, running its initializer first if it has not run."""

        if hasattr(cf, "cond"):
            return cf.cond(
                is_variable_initialized(self), self.read_value, lambda: self.initial_value
            )
        with ops.control_dependencies([self._initializer_op]):
            return array_ops.identity(self._variable)

    # -- properties -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def graph(self):
        return self._graph

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self._variable.shape

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def constraint(self):
        return self._constraint

    def set_shape(self, shape) -> None:
        self._variable.set_shape(shape)
        self._snapshot.set_shape(shape)

    # -- state changes ----------------------------------------------------------------------
    def assign(self, value, use_locking=False, name=None, read_value=True, validate_shape=None):
        """An op setting the variable to ``value``; evaluates to the new value."""
        with name_scope(name, "Assign", [self._variable, value]) as scope:
            v = convert_to_tensor(value, dtype=self.dtype.base_dtype, name="value")

            out = create(
                "Assign",
                [self._variable, v],
                {
                    "validate_shape": True if validate_shape is None else bool(validate_shape),
                    "use_locking": bool(use_locking) if use_locking is not None else True,
                },
                scope,
            ).outputs[0]
        return out if read_value else out.op

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        out = state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return out if read_value else out.op

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        out = state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return out if read_value else out.op

    def load(self, value, session=None) -> None:
        """Assigns ``value`` in ``session`` (default session) by feeding the initializer."""
        sess = session_for(self._variable, session, "load")
        sess.run(self._initializer_op, {self._initial_value: value})

    def eval(self, session=None):
        """The variable's value in ``session`` (default session)."""
        return self._variable.eval(session=session)

    def count_up_to(self, limit):
        """An op incrementing this int32/int64 scalar variable until it reaches ``limit``;
        evaluates to the value before the increment (``OutOfRangeError`` at the limit)."""
        return state_ops.count_up_to(self._variable, limit)

    # -- python protocol --------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self):
        raise TypeError("Using a Variable as a Python `bool` is not allowed.")

    def __iter__(self):
        raise TypeError(f"Variable {self.name} is not iterable.")

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(
            f"Cannot convert a symbolic Variable ({self.name}) to a "
            "numpy array; run it in a Session to get its value."
        )

    @staticmethod
    def _overload_operators():
        def make(method):
            def fn(self, *args):
                return method(self._snapshot, *args)

            return fn

        for key in list(math_ops.OVERLOADS) + ["__getitem__"]:
            method = getattr(Tensor, key, None)
            if method is not None:
                setattr(Variable, key, make(method))


def _variable_to_tensor(v, dtype=None, name=None, as_ref=False):  # noqa: ARG001 - a tensor conversion function's signature
    if as_ref:
        return v._ref()
    return v.value()


register_tensor_conversion_function(Variable, _variable_to_tensor)


# -----------------------------------------------------------------------------------------
# Collections and initializers
# -----------------------------------------------------------------------------------------


def global_variables(scope=None) -> list[Variable]:
    return ops.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def all_variables() -> list[Variable]:
    return global_variables()


def trainable_variables(scope=None) -> list[Variable]:
    return ops.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None) -> list[Variable]:
    return ops.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None) -> list[Variable]:
    return ops.get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None) -> list[Variable]:
    return ops.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """An op running the initializers of ``var_list`` (a no-op when it is empty)."""
    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer():
    """An op named ``init`` that initializes every global variable."""
    return variables_initializer(global_variables())


def local_variables_initializer():
    return variables_initializer(local_variables())


initialize_all_variables = global_variables_initializer
initialize_local_variables = local_variables_initializer
initialize_variables = variables_initializer


def is_variable_initialized(variable):
    return state_ops.is_variable_initialized(variable)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    if var_list is None:
        var_list = global_variables() + local_variables()
    return state_ops.report_uninitialized_variables(var_list, name)


def assert_variables_initialized(var_list=None):
    if var_list is None:
        var_list = global_variables() + local_variables()
    if not var_list:
        return no_op()
    ranks = [math_ops.cast(is_variable_initialized(v), dtypes.int32) for v in var_list]
    return logging_ops.assert_equal(
        math_ops.add_n(ranks) if len(ranks) > 1 else ranks[0],
        len(ranks),
        message="Some variables are not initialized",
    )


def is_tensor(x) -> bool:
    """Whether ``x`` is a graph tensor or a variable (TF's "tensor-like"), not a Python or
    numpy value."""
    return isinstance(x, (Tensor, Variable))
