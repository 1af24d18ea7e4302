"""``tf.keras.backend`` as TF1's Keras has it in graph mode: the session Keras runs in, the
learning phase, per-graph layer-name counters, and the value helpers layers and models use.

Keras in TF1 creates its session on first use (or uses the default session, or the one given
to :func:`set_session`) and initializes the variables Keras created that are not yet
initialized there, so ``model.fit`` works without ``global_variables_initializer``.
"""

from __future__ import annotations

import weakref
from collections import defaultdict

import numpy as np

from engine import dtypes
from engine.framework import graph as ops
from engine.framework.constant_op import constant as _constant
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, get_default_graph, get_default_session
from engine.ops import array as array_ops
from engine.ops import state as state_ops
from engine.session import Session
from engine.variables import Variable, is_variable_initialized

__all__ = [
    "batch_get_value",
    "batch_set_value",
    "cast_to_floatx",
    "clear_session",
    "constant",
    "dtype",
    "epsilon",
    "eval",
    "floatx",
    "get_session",
    "get_uid",
    "get_value",
    "image_data_format",
    "int_shape",
    "learning_phase",
    "manual_variable_initialization",
    "ndim",
    "placeholder",
    "reset_uids",
    "set_epsilon",
    "set_floatx",
    "set_image_data_format",
    "set_learning_phase",
    "set_session",
    "set_value",
    "variable",
]

_CONFIG = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last"}
_STATE = {"session": None, "manual_init": False}


class _GraphState:
    """What Keras keeps per graph: name counters, the learning phase, its variables."""

    def __init__(self):
        self.uids: dict[str, int] = defaultdict(int)
        self.learning_phase = None  # the placeholder, made on first use
        self.fixed_phase = None  # set_learning_phase's value
        self.variables: list = []
        self.assigns: dict = {}  # variable -> (placeholder, assign op), for set_value


_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_INITIALIZED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # session -> var ids


def _state(graph=None) -> _GraphState:
    graph = graph or get_default_graph()
    st = _GRAPHS.get(graph)
    if st is None:
        st = _GRAPHS[graph] = _GraphState()
    return st


# -- configuration -------------------------------------------------------------------------


def floatx() -> str:
    """The default float type of Keras layers and variables (``'float32'``)."""
    return _CONFIG["floatx"]


def set_floatx(value: str) -> None:
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}; expected float16, float32 or float64")
    _CONFIG["floatx"] = str(value)


def epsilon() -> float:
    """The fuzz factor Keras adds to denominators and clips probabilities by (1e-7)."""
    return _CONFIG["epsilon"]


def set_epsilon(value: float) -> None:
    _CONFIG["epsilon"] = float(value)


def image_data_format() -> str:
    return _CONFIG["image_data_format"]


def set_image_data_format(data_format: str) -> None:
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"Unknown data_format: {data_format}; expected channels_last or channels_first"
        )
    _CONFIG["image_data_format"] = data_format


def cast_to_floatx(x):
    return np.asarray(x, dtype=floatx())


# -- names ---------------------------------------------------------------------------------


def get_uid(prefix: str = "") -> int:
    """1, 2, 3, ... for successive calls with ``prefix`` in the default graph."""
    st = _state()
    st.uids[prefix] += 1
    return st.uids[prefix]


def unique_object_name(base: str) -> str:
    """``base``, then ``base_1``, ``base_2``, ...: Keras' layer names, counted per graph."""
    n = get_uid(base)
    return base if n == 1 else f"{base}_{n - 1}"


def reset_uids() -> None:
    _state().uids.clear()


# -- session -------------------------------------------------------------------------------


def get_session() -> Session:
    """The session Keras runs in: the default session if one is entered, else the one given to
    :func:`set_session`, else one Keras creates for the default graph. Variables Keras created
    that are not initialized in it yet are initialized first."""
    session = get_default_session()
    if session is None:
        session = _STATE["session"]
        if session is None or session.graph is not get_default_graph():
            session = _STATE["session"] = Session()
    if not _STATE["manual_init"]:
        _initialize_variables(session)
    return session


def set_session(session) -> None:
    """Makes Keras run in ``session`` (its graph should be the one the model is built in)."""
    _STATE["session"] = session


def clear_session() -> None:
    """Resets the default graph and forgets Keras' session and name counters."""
    session = _STATE["session"]
    _STATE["session"] = None
    if session is not None:
        session.close()
    ops.reset_default_graph()


def manual_variable_initialization(value: bool) -> None:
    """With True, Keras no longer initializes its variables itself."""
    _STATE["manual_init"] = bool(value)


def track_variable(v) -> None:
    """Marks ``v`` as Keras' own, so :func:`get_session` initializes it."""
    _state(v.graph).variables.append(v)


def _initialize_variables(session) -> None:
    st = _GRAPHS.get(session.graph)
    if st is None or not st.variables:
        return
    done = _INITIALIZED.setdefault(session, set())
    todo = [v for v in st.variables if id(v) not in done]
    if not todo:
        return
    flags = session.run([is_variable_initialized(v) for v in todo])
    fresh = [v.initializer for v, ok in zip(todo, flags) if not ok]
    if fresh:
        session.run(fresh)
    done.update(id(v) for v in todo)


# -- learning phase ------------------------------------------------------------------------


def learning_phase():
    """The flag that switches layers such as Dropout and BatchNormalization to training:
    a boolean placeholder defaulting to False (``fit`` feeds True), or the value given to
    :func:`set_learning_phase`."""
    st = _state()
    if st.fixed_phase is not None:
        return st.fixed_phase
    if st.learning_phase is None:
        with ops.name_scope(""), ops.control_dependencies(None):
            st.learning_phase = array_ops.placeholder_with_default(
                False, shape=(), name="keras_learning_phase"
            )
    return st.learning_phase


def set_learning_phase(value) -> None:
    """Fixes the learning phase to 0 (test) or 1 (train) for layers built from now on."""
    if value not in (0, 1, False, True):
        raise ValueError(f"Expected learning phase to be 0 or 1, got {value!r}")
    _state().fixed_phase = int(value)


def learning_phase_placeholder():
    """The placeholder itself (None when the phase is fixed): what ``fit`` feeds."""
    st = _state()
    return None if st.fixed_phase is not None else learning_phase()


# -- tensors and values --------------------------------------------------------------------


def variable(value, dtype=None, name=None, constraint=None) -> Variable:
    """A variable holding ``value``, initialized by Keras' session on first use."""
    dtype = dtype or floatx()
    v = Variable(
        np.asarray(value, dtype=dtypes.as_dtype(dtype).as_numpy_dtype),
        name=name,
        constraint=constraint,
    )
    track_variable(v)
    return v


def constant(value, dtype=None, shape=None, name=None) -> Tensor:
    return _constant(value, dtype=dtype or floatx(), shape=shape, name=name)


def placeholder(shape=None, ndim=None, dtype=None, name=None) -> Tensor:
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    return array_ops.placeholder(dtype or floatx(), shape=shape, name=name)


def int_shape(x):
    """The static shape of ``x`` as a tuple of ints and Nones (None when unknown)."""
    if isinstance(x, np.ndarray):
        return x.shape
    shape = x.shape.as_tuple() if hasattr(x.shape, "as_tuple") else x.get_shape().as_tuple()
    return None if shape is None else tuple(shape)


def ndim(x):
    shape = int_shape(x)
    return None if shape is None else len(shape)


def dtype(x) -> str:
    return x.dtype.base_dtype.name


def eval(x):  # noqa: A001 - Keras' name
    return get_value(x)


def get_value(x):
    """The value of a variable or tensor, from Keras' session."""
    if isinstance(x, np.ndarray) or np.isscalar(x):
        return x
    return get_session().run(x)


def batch_get_value(tensors) -> list:
    return get_session().run(list(tensors)) if tensors else []


def set_value(x, value) -> None:
    batch_set_value([(x, value)])


def batch_set_value(tuples) -> None:
    """Assigns each ``(variable, value)``; the assign ops are built once per variable."""
    if not tuples:
        return
    session = get_session()
    fetches, feed = [], {}
    for var, value in tuples:
        st = _state(var.graph)
        entry = st.assigns.get(var)
        if entry is None:
            with var.graph.as_default(), ops.name_scope(None), ops.control_dependencies(None):
                base = var.dtype.base_dtype
                ph = array_ops.placeholder(base, shape=var.shape, name="assign_placeholder")
                entry = st.assigns[var] = (ph, state_ops.assign(var, ph).op)
        value = np.asarray(value, dtype=var.dtype.base_dtype.as_numpy_dtype)
        if not entry[0].shape.is_compatible_with(value.shape):
            raise ValueError(
                f"Cannot assign a value of shape {value.shape} to variable {var.name} of "
                f"shape {var.shape}"
            )
        feed[entry[0]] = value
        fetches.append(entry[1])
    session.run(fetches, feed_dict=feed)


def as_tensor(x, dtype=None) -> Tensor:
    return convert_to_tensor(x, dtype=dtype)
