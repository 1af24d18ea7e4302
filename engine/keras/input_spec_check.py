"""TF1 Keras' check of a layer's inputs against its ``input_spec`` before each call: the
rank (``ndim``, ``min_ndim``, ``max_ndim``) and fixed axes (``axes={-1: 16}``), with TF's
messages (``Input 0 of layer dense is incompatible with the layer: expected min_ndim=2,
found ndim=1. Full shape received: [4]``)."""

from __future__ import annotations

__all__ = ["assert_input_compatibility"]


def _flat(x) -> list:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flat(item)]
    if isinstance(x, dict):
        return [y for item in x.values() for y in _flat(item)]
    return [x]


def _check_rank(i: int, rank, spec, layer_name: str, shape) -> None:
    prefix = f"Input {i} of layer {layer_name} is incompatible with the layer:"
    if rank is None:
        raise ValueError(f"{prefix} its rank is undefined, but the layer requires a defined rank.")
    if spec.ndim is not None and rank != spec.ndim:
        raise ValueError(
            f"{prefix} expected ndim={spec.ndim}, found ndim={rank}. Full shape received: {shape}"
        )
    if spec.max_ndim is not None and rank > spec.max_ndim:
        raise ValueError(f"{prefix} expected max_ndim={spec.max_ndim}, found ndim={rank}")
    if spec.min_ndim is not None and rank < spec.min_ndim:
        raise ValueError(
            f"{prefix} expected min_ndim={spec.min_ndim}, found ndim={rank}. Full shape "
            f"received: {shape}"
        )


def assert_input_compatibility(input_spec, inputs, layer_name: str) -> None:
    """Raises ValueError when ``inputs`` do not fit ``input_spec`` (one spec or a list)."""
    if not input_spec:
        return
    specs = _flat(input_spec)
    tensors = _flat(inputs)
    if len(tensors) != len(specs):
        raise ValueError(
            f"Layer {layer_name} expects {len(specs)} inputs, but it received {len(tensors)} "
            "input tensors."
        )
    for i, (x, spec) in enumerate(zip(tensors, specs)):
        shape_obj = getattr(x, "shape", None)
        if spec is None or shape_obj is None or not hasattr(shape_obj, "rank"):
            continue
        rank = shape_obj.rank
        shape = shape_obj.as_list() if rank is not None else None
        if spec.ndim is not None or spec.min_ndim is not None or spec.max_ndim is not None:
            _check_rank(i, rank, spec, layer_name, shape)
        for axis, value in (spec.axes or {}).items():
            if shape is None or value is None:
                continue
            if shape[int(axis)] not in (value, None):
                raise ValueError(
                    f"Input {i} of layer {layer_name} is incompatible with the layer: expected "
                    f"axis {axis} of input shape to have value {value} but received input with "
                    f"shape {shape}"
                )
