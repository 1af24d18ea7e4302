"""The arrays ``fit``/``evaluate``/``predict`` take, checked against the model: one array per
input (a list, or a dict by input name), one per output, 1-D arrays as a column, dtypes as
the placeholders', and sample weights (given, or from ``class_weight``)."""

from __future__ import annotations

import numpy as np

from engine.keras import backend, losses

__all__ = [
    "batches",
    "check_array_lengths",
    "class_weights_to_samples",
    "slice_arrays",
    "standardize_inputs",
    "standardize_targets",
]


def _as_arrays(data, names: list, what: str) -> list:
    if isinstance(data, dict):
        missing = [n for n in names if n not in data]
        if missing:
            raise ValueError(
                f'No data provided for "{missing[0]}". Need data for each key in: {names}'
            )
        return [data[n] for n in names]
    if isinstance(data, (list, tuple)):
        if names and len(data) != len(names):
            raise ValueError(
                f"Error when checking model {what}: the list of Numpy arrays that you are "
                f"passing to your model is not the size the model expected. Expected to see "
                f"{len(names)} array(s), but instead got the following list of {len(data)} "
                "arrays"
            )
        return list(data)
    if names and len(names) > 1:
        raise ValueError(
            f"Error when checking model {what}: the model expects {len(names)} "
            f"arrays ({names}), but got one array"
        )
    return [data]


def _column(a):
    if hasattr(a, "initializer") or hasattr(a, "make_one_shot_iterator"):
        raise TypeError(
            "A tf.data Dataset or iterator must be passed as `x` itself (yielding (x, y) "
            "batches), not inside a list or dict of arrays"
        )
    a = np.asarray(a)
    if a.dtype == object:
        raise TypeError("Keras inputs must be numeric (or string) arrays, not Python objects")
    return a[:, None] if a.ndim == 1 else a


def _check_shape(a, tensor, name: str, what: str, check_dims=True):
    shape = backend.int_shape(tensor)
    if shape is None:
        return
    if a.ndim != len(shape):
        raise ValueError(
            f"Error when checking {what}: expected {name} to have {len(shape)} "
            f"dimensions, but got array with shape {a.shape}"
        )
    if check_dims:
        for got, want in zip(a.shape[1:], shape[1:]):
            if want is not None and got != want:
                raise ValueError(
                    f"Error when checking {what}: expected {name} to have shape "
                    f"{shape[1:]} but got array with shape {a.shape[1:]}"
                )


def standardize_inputs(model, x) -> list:
    if x is None:
        raise ValueError("No input data given: pass `x`")
    names = model.input_names if model.inputs else []
    arrays = [_column(a) for a in _as_arrays(x, names, "input")]
    if not model.inputs:
        return arrays
    out = []
    for a, t, name in zip(arrays, model.inputs, names):
        _check_shape(a, t, name, "input")
        out.append(
            a.astype(t.dtype.base_dtype.as_numpy_dtype, copy=False)
            if a.dtype.kind not in "SUO"
            else a
        )
    return out


def _is_sparse_loss(model, i: int) -> bool:
    loss = model._compiled["loss"] if model._compiled else None
    if isinstance(loss, dict):
        loss = loss.get(model.output_names[i])
    elif isinstance(loss, (list, tuple)):
        loss = loss[i]
    fn = losses.get(loss) if isinstance(loss, str) else loss
    return getattr(fn, "fn", fn) is losses.sparse_categorical_crossentropy


def standardize_targets(model, y, fed=None) -> list:
    """``y`` as one array per output with a loss (``fed``: their indices; all by default)."""
    fed = range(len(model.outputs)) if fed is None else fed
    names = [model.output_names[i] for i in fed]
    arrays = [_column(a) for a in _as_arrays(y, names, "target")]
    out = []
    for i, a, name in zip(fed, arrays, names):
        t = model.outputs[i]
        sparse = _is_sparse_loss(model, i)
        _check_shape(a, t, name, "target", check_dims=not sparse)
        out.append(a.astype(t.dtype.base_dtype.as_numpy_dtype, copy=False))
    return out


def class_weights_to_samples(model, ys, sample_weight, class_weight, fed=None) -> list:
    """One weight array per output with a loss (``fed``: their indices; all by default):
    ``sample_weight`` (per sample, or per timestep for outputs compiled with
    ``sample_weight_mode="temporal"``) times the ``class_weight`` of each sample's class
    (TF1's ``standardize_weights``); ones when neither is given."""
    fed = range(len(model.outputs)) if fed is None else fed
    names = [model.output_names[i] for i in fed]
    modes = [model._sample_weight_modes()[i] for i in fed]
    given = (
        _as_arrays(sample_weight, names, "sample_weight")
        if sample_weight is not None
        else [None] * len(ys)
    )
    per = (
        class_weight
        if isinstance(class_weight, dict)
        and all(k in names for k in class_weight)
        and len(names) > 1
        else None
    )
    out = []
    for name, y, w, mode in zip(names, ys, given, modes):
        cw = (per.get(name) if per is not None else class_weight) if class_weight else None
        out.append(_standardize_weights(y, w, cw, mode))
    return out


def _standardize_weights(y, w, class_weight, mode) -> np.ndarray:
    if mode == "temporal" and y.ndim < 3:
        raise ValueError(
            f"Found a sample_weight array for an input with shape {y.shape}. Timestep-wise "
            'sample weighting (use of sample_weight_mode="temporal") is restricted to '
            "outputs that are at least 3D, i.e. that have a time dimension."
        )
    if w is not None:
        w = np.asarray(w, backend.floatx())
        if mode == "temporal" and w.ndim != 2:
            raise ValueError(
                f"Found a sample_weight array with shape {w.shape}. In order to use "
                "timestep-wise sample weighting, you should pass a 2D sample_weight array."
            )
        if mode != "temporal" and w.ndim != 1:
            raise ValueError(
                f"Found a sample_weight array with shape {w.shape}. In order to use "
                'timestep-wise sample weights, you should specify sample_weight_mode="temporal" '
                f'in compile(); found "{mode}" instead. If you just mean to use sample-wise '
                "weights, make sure your sample_weight array is 1D."
            )
        if y.shape[: w.ndim] != w.shape:
            raise ValueError(
                f"Found a sample_weight array with shape {w.shape} for an input with shape "
                f"{y.shape}. sample_weight cannot be broadcast."
            )
    if class_weight:
        if y.ndim > 2:
            raise ValueError("`class_weight` not supported for 3+ dimensional targets.")
        cw = _from_class_weight(y, class_weight)
        # TF1 multiplies the two when both are given.
        w = cw if w is None else w * cw
    if w is None:
        w = np.ones(y.shape[:2] if mode == "temporal" else y.shape[:1], backend.floatx())
    return w


def _from_class_weight(y, class_weight) -> np.ndarray:
    classes = (
        np.argmax(y, axis=1)
        if y.ndim == 2 and y.shape[1] > 1
        else y.reshape(len(y), -1)[:, 0].astype(np.int64)
    )
    missing = sorted(set(classes.tolist()) - set(class_weight))
    if missing:
        raise ValueError(
            f"`class_weight` must contain all classes in the data. The classes "
            f"{missing} exist in the data but not in `class_weight`."
        )
    return np.asarray([class_weight[c] for c in classes.tolist()], backend.floatx())


def check_array_lengths(xs, ys, ws) -> None:
    lengths = {len(a) for a in xs}
    if len(lengths) > 1:
        raise ValueError(
            f"All input arrays (x) should have the same number of samples. Got "
            f"array shapes: {[a.shape for a in xs]}"
        )
    targets = {len(a) for a in ys} | {len(a) for a in ws}
    if len(targets) > 1 or (lengths and targets and lengths != targets):
        raise ValueError(
            f"Input arrays should have the same number of samples as target arrays. Found "
            f"{lengths.pop() if lengths else 0} input samples and "
            f"{sorted(targets)[0]} target samples."
        )


def batches(index, batch_size: int):
    for start in range(0, len(index), batch_size):
        yield index[start : start + batch_size]


def slice_arrays(arrays, idx) -> list:
    return [a[idx] for a in arrays]
