"""The global step: a non-trainable int64 scalar variable counting training steps."""

from __future__ import annotations

from engine import dtypes
from engine.framework import graph as ops
from engine.framework.graph import GraphKeys
from engine.variables import Variable

__all__ = [
    "get_global_step",
    "create_global_step",
    "get_or_create_global_step",
    "global_step",
    "assert_global_step",
]


def get_global_step(graph=None):
    """The global step variable of ``graph`` (default graph), or None when there is none."""
    graph = graph or ops.get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        raise TypeError(
            "There are multiple items in collection global_step; there should be only one."
        )
    if found:
        return found[0]
    try:
        t = graph.get_tensor_by_name("global_step:0")
    except (KeyError, ValueError):
        return None
    assert_global_step(t)
    return t


def create_global_step(graph=None):
    """Creates the global step; raises ValueError if one exists already."""

    graph = graph or ops.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), ops.control_dependencies(None), ops.name_scope(None):
        return Variable(
            0,
            name="global_step",
            trainable=False,
            dtype=dtypes.int64,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP],
        )


def get_or_create_global_step(graph=None):
    """The global step of ``graph``, created if it does not exist yet."""
    graph = graph or ops.get_default_graph()
    return get_global_step(graph) or create_global_step(graph)


def global_step(sess, global_step_tensor) -> int:
    """The current value of the global step in ``sess``."""
    return int(sess.run(global_step_tensor))


def assert_global_step(global_step_tensor) -> None:
    dtype = global_step_tensor.dtype.base_dtype
    if dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f'Existing "global_step" does not have integer type: {dtype.name}')
    if global_step_tensor.shape.ndims not in (0, None):
        raise TypeError(f'Existing "global_step" is not scalar: {global_step_tensor.shape}')
