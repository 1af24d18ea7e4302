"""TF1's ``SparseTensor``: a composite of three dense tensors, and its session value type.

A ``SparseTensor(indices, values, dense_shape)`` stands for the dense tensor whose entries at
``indices`` (int64 ``[N, rank]``) are ``values`` (``[N]``) and zero elsewhere, of shape
``dense_shape`` (int64 ``[rank]``). It is not a graph element itself: ops take its three
tensors as inputs and sparse results come back as three outputs, re-wrapped by the Python API
(``engine.sparse_api``, which also makes ``sparse_placeholder``). A session fetches a
``SparseTensor`` as a ``SparseTensorValue`` (a namedtuple of arrays) and feeds one from a
``SparseTensorValue`` or an ``(indices, values, dense_shape)`` triple, as TF's ``Session``
does; the runtime asks this module to expand one into its component tensors
(``fetch_components``, ``expand_feed``, ``sparse_feed_callable``).

>>> sp = SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
>>> sp.shape
TensorShape([3, 4])
"""

from __future__ import annotations

import collections

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope, session_for
from engine.framework.tensor_util import constant_value_as_shape
from engine.tensor_shape import TensorShape, as_shape

__all__ = [
    "SparseTensor",
    "SparseTensorValue",
    "is_sparse",
    "convert_to_sparse_tensor",
]

SparseTensorValue = collections.namedtuple(
    "SparseTensorValue", ["indices", "values", "dense_shape"]
)


class SparseTensor:
    """A sparse tensor: ``indices`` (int64 ``[N, rank]``), ``values`` (``[N]``) and
    ``dense_shape`` (int64 ``[rank]``), each a tensor of one graph."""

    @classmethod
    def from_value(cls, sparse_tensor_value) -> SparseTensor:
        """``sparse_tensor_value`` (a SparseTensor, returned as is, or a SparseTensorValue)
        as a SparseTensor."""
        if not is_sparse(sparse_tensor_value):
            raise TypeError(
                f"Argument sparse_tensor_value={sparse_tensor_value} "
                "is neither a SparseTensor nor SparseTensorValue."
            )
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return SparseTensor(
            indices=sparse_tensor_value.indices,
            values=sparse_tensor_value.values,
            dense_shape=sparse_tensor_value.dense_shape,
        )

    def __init__(self, indices, values, dense_shape):
        with name_scope(None, "SparseTensor", _tensors_of(indices, values, dense_shape)):
            indices = convert_to_tensor(indices, name="indices", dtype=dtypes.int64)
            values = convert_to_tensor(values, name="values")
            dense_shape = convert_to_tensor(dense_shape, name="dense_shape", dtype=dtypes.int64)
            dense_shape_default = constant_value_as_shape(dense_shape)
        self._indices = indices
        self._values = values
        self._dense_shape = dense_shape
        self._dense_shape_default = dense_shape_default
        indices_shape = indices.shape.with_rank(2)
        values_shape = values.shape.with_rank(1)
        dense_shape_shape = dense_shape.shape.with_rank(1)
        indices_shape.dims[0].assert_is_compatible_with(values_shape.dims[0])
        indices_shape.dims[1].assert_is_compatible_with(dense_shape_shape.dims[0])

    @property
    def indices(self) -> Tensor:
        """The indices of the stored values: int64 ``[N, rank]``."""
        return self._indices

    @property
    def values(self) -> Tensor:
        """The stored values: ``[N]``."""
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        """The shape of the dense tensor: int64 ``[rank]``."""
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def op(self):
        """The operation that produces ``values``."""
        return self._values.op

    @property
    def graph(self):
        return self._indices.graph

    @property
    def shape(self) -> TensorShape:
        """The static shape of the dense tensor (what ``dense_shape`` is known to be)."""
        return self._dense_shape_default

    def get_shape(self) -> TensorShape:
        return self._dense_shape_default

    def set_shape(self, shape) -> None:
        """Merges ``shape`` into the static shape (ValueError when incompatible)."""
        self._dense_shape_default = self._dense_shape_default.merge_with(as_shape(shape))

    def with_values(self, new_values) -> SparseTensor:
        """The same indices and dense shape with ``new_values``."""
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def eval(self, feed_dict=None, session=None) -> SparseTensorValue:
        """Runs this sparse tensor in ``session`` (default: the default session)."""
        return session_for(self._indices, session, "eval").run(self, feed_dict)

    def consumers(self) -> list:
        """The operations that read any of the three component tensors."""
        out = []
        for t in (self._indices, self._values, self._dense_shape):
            out.extend(c for c in t.consumers() if c not in out)
        return out

    def __repr__(self) -> str:
        return (
            f"SparseTensor(indices={self._indices}, values={self._values}, "
            f"dense_shape={self._dense_shape})"
        )


def _tensors_of(*parts) -> list:
    return [p for p in parts if isinstance(p, Tensor)]


def is_sparse(x) -> bool:
    """Whether ``x`` is a SparseTensor or a SparseTensorValue."""
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_sparse_tensor(sp_input) -> SparseTensor:
    """``sp_input`` (a SparseTensor or SparseTensorValue) as a SparseTensor; TypeError
    otherwise (TF's ``Input must be a SparseTensor.``)."""
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return sp_input


# -- the session's side ---------------------------------------------------------------------


def fetch_components(fetch: SparseTensor) -> tuple[list, object]:
    """The three tensors a session fetches for ``fetch``, and how their values become the
    caller's ``SparseTensorValue``."""
    return (
        [fetch.indices, fetch.values, fetch.dense_shape],
        lambda parts: SparseTensorValue(*parts),
    )


def expand_feed(key: SparseTensor, value) -> list:
    """(tensor, value) pairs feeding ``key``'s three parts from ``value``: a
    SparseTensorValue or an ``(indices, values, dense_shape)`` tuple or list."""
    if isinstance(value, SparseTensor) or isinstance(value, Tensor):
        raise TypeError(
            "The value of a feed cannot be a Tensor object. Acceptable feed values for a "
            "SparseTensor are a SparseTensorValue or an (indices, values, dense_shape) tuple."
        )
    if not isinstance(value, (tuple, list)):
        raise TypeError(
            f"Cannot feed a value of type {type(value).__name__} for SparseTensor "
            f"{key.values.name}: expected a SparseTensorValue or an (indices, values, "
            "dense_shape) tuple"
        )
    if len(value) != 3:
        raise ValueError(
            f"The feed value for SparseTensor {key.values.name} must have 3 parts "
            f"(indices, values, dense_shape), got {len(value)}"
        )
    return list(zip([key.indices, key.values, key.dense_shape], value))


def sparse_feed_callable(make_callable, fetches, feed_list, accept_options: bool):
    """``Session.make_callable`` for a ``feed_list`` holding SparseTensors: a callable over
    the expanded feed list, taking one value (a SparseTensorValue or triple) per entry."""
    flat = []
    for key in feed_list:
        flat.extend(_parts(key) if isinstance(key, SparseTensor) else [key])
    inner = make_callable(fetches, flat, accept_options)
    keys = list(feed_list)

    def run_callable(*feed_values, **options):
        if len(feed_values) != len(keys):
            raise TypeError(
                f"This callable takes {len(keys)} feed value(s), got {len(feed_values)}"
            )
        args = []
        for key, value in zip(keys, feed_values):
            if isinstance(key, SparseTensor):
                args.extend(v for _, v in expand_feed(key, value))
            else:
                args.append(value)
        return inner(*args, **options)

    return run_callable


def _parts(sp: SparseTensor) -> list:
    return [sp.indices, sp.values, sp.dense_shape]
