"""Feeds and fetches: converting fed values, flattening fetch structures, collecting results."""

from __future__ import annotations

import collections

import numpy as np

from engine.framework.graph import Graph, Operation, Tensor
from engine.framework.sparse_tensor import SparseTensor, fetch_components
from engine.runtime.interpreter import copy_error
from engine.runtime.values import to_host

__all__ = ["FeedSpec", "FetchStructure", "collect"]

_ndarray = np.ndarray


class FeedSpec:
    """How a value fed for one tensor is converted and checked."""

    __slots__ = ("tensor", "np_dtype", "dims", "is_string", "name")

    def __init__(self, tensor: Tensor):
        self.tensor = tensor
        base = tensor.dtype.base_dtype
        self.np_dtype = base.np
        self.is_string = base.name == "string"
        self.dims = tensor.shape.as_tuple()
        self.name = tensor.name

    def without_shape_check(self) -> FeedSpec:
        """This spec, converting the dtype but taking any shape (as TF's C++ session does:
        only the Python client checks fed shapes)."""
        spec = FeedSpec(self.tensor)
        spec.dims = None
        return spec

    def convert(self, value):
        """The fed value as an array of the tensor's dtype, checked against its static shape."""
        if isinstance(value, Tensor):
            raise TypeError(
                "The value of a feed cannot be a Tensor object. Acceptable feed "
                "values include Python scalars, strings, lists, numpy ndarrays."
            )
        if self.is_string:
            arr = _as_string_array(value)
        elif value.__class__ is _ndarray and value.dtype is self.np_dtype:
            arr = value
        else:
            try:
                arr = np.asarray(value, dtype=self.np_dtype)
            except (TypeError, ValueError) as e:
                raise ValueError(
                    f"Cannot feed value {_short_repr(value)} for Tensor "
                    f"'{self.name}' of dtype {self.tensor.dtype.base_dtype.name}: "
                    f"{e}"
                ) from None
        dims = self.dims
        if dims is not None:
            shape = arr.shape
            if len(shape) != len(dims) or any(
                d is not None and d != s for d, s in zip(dims, shape)
            ):
                raise ValueError(
                    f"Cannot feed value of shape {shape} for Tensor "
                    f"'{self.name}', which has shape '{self.tensor.shape}'"
                )
        return arr


def _short_repr(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _as_string_array(value) -> np.ndarray:
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if arr.dtype.kind == "O":
        flat = arr.reshape(-1)
        if all(isinstance(v, bytes) for v in flat):
            return arr
        out = np.empty(arr.shape, dtype=object)
        oflat = out.reshape(-1)
        for i, v in enumerate(flat):
            if isinstance(v, str):
                v = v.encode("utf-8")
            elif not isinstance(v, bytes):
                raise TypeError(f"Cannot feed {type(v).__name__} value {v!r} to a string tensor")
            oflat[i] = v
        return out
    if arr.dtype.kind in ("U", "S"):
        out = np.empty(arr.shape, dtype=object)
        oflat = out.reshape(-1)
        for i, v in enumerate(arr.reshape(-1)):
            oflat[i] = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        return out
    raise TypeError(f"Cannot feed a value of numpy dtype {arr.dtype} to a string tensor")


class FetchStructure:
    """Flattens a nested fetch argument once and rebuilds results in the caller's shape."""

    __slots__ = ("elements", "build")

    def __init__(self, graph: Graph, fetches):
        self.elements: list = []
        index: dict[int, int] = {}
        self.build = self._flatten(graph, fetches, index)

    def _add(self, elem) -> int:
        self.elements.append(elem)
        return len(self.elements) - 1

    def _flatten(self, graph, f, index):
        if f is None:
            raise TypeError(
                f"Fetch argument {f!r} has invalid type {type(f)}, must be a "
                "string or Tensor. (Can not convert a NoneType into a Tensor or "
                "Operation.)"
            )
        if isinstance(f, SparseTensor):  # fetched as a SparseTensorValue of its 3 parts
            parts, rebuild = fetch_components(f)
            builders = [self._flatten_element(graph, t, index) for t in parts]
            return lambda vals: rebuild([b(vals) for b in builders])
        if isinstance(f, (Tensor, Operation, str)) or (
            hasattr(f, "_as_graph_element") and not isinstance(f, (list, tuple, dict))
        ):
            return self._flatten_element(graph, f, index)
        if isinstance(f, dict):
            builders = [(key, self._flatten(graph, v, index)) for key, v in f.items()]
            cls = type(f)

            def build_dict(vals):
                if cls is collections.defaultdict:
                    out = collections.defaultdict(f.default_factory)
                else:
                    try:
                        out = cls()
                    except TypeError:
                        out = {}
                for key, b in builders:
                    out[key] = b(vals)
                return out

            return build_dict
        if isinstance(f, (list, tuple)):
            builders = [self._flatten(graph, v, index) for v in f]
            if isinstance(f, tuple) and hasattr(f, "_fields"):
                cls = type(f)
                return lambda vals: cls(*[b(vals) for b in builders])
            if isinstance(f, tuple):
                return lambda vals: tuple(b(vals) for b in builders)
            return lambda vals: [b(vals) for b in builders]
        raise TypeError(
            f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or "
            f"Tensor. (Can not convert a {type(f).__name__} into a Tensor or "
            "Operation.)"
        )

    def _flatten_element(self, graph, f, index):
        try:
            elem = graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
        except TypeError as e:
            raise TypeError(
                f"Fetch argument {f!r} has invalid type {type(f)}, must be a "
                f"string or Tensor. ({e})"
            ) from None
        except ValueError as e:
            raise ValueError(
                f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e})"
            ) from None
        except KeyError as e:
            raise ValueError(
                f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e.args[0]})"
            ) from None
        k = index.get(id(elem))
        if k is None:
            k = index[id(elem)] = self._add(elem)
        if isinstance(elem, Operation):
            return lambda _vals: None
        return lambda vals, k=k: vals[k]


def collect(plan, vals) -> list:
    """The fetched values of ``plan`` as the caller gets them: host arrays (numpy scalars
    for 0-d), copied when they could alias state the session keeps."""
    out = []
    for slot, copy, device in zip(plan.fetch_slots, plan.fetch_copy, plan.fetch_host):
        if slot is None:
            out.append(None)
            continue
        v = vals[slot]
        if device is not None:  # on a device: the copy to host memory is private
            try:
                v = device.to_host(v)
            except Exception as exc:  # noqa: BLE001 - typed for the caller
                raise copy_error(exc, f"fetching a value from {device.name}") from exc
            copy = False
        if v.__class__ is _ndarray:
            if v.ndim == 0:
                v = v[()]
            elif copy:
                v = v.copy()
        else:
            v = to_host(v)
        out.append(v)
    return out
