"""Op-table rows for the ``ai.onnx.ml`` domain (what scikit-learn pipelines exported by
skl2onnx, and LightGBM/XGBoost models exported by onnxmltools, are made of): linear models,
the preprocessing operators, the encoders and ZipMap here; tree ensembles in
``mapping_ml_trees.py``, support vector machines in ``mapping_ml_svm.py``.

The domain has its own opset version (``opset_import`` of "ai.onnx.ml"), so its rows live in
their own table (``register(..., domain=ML_DOMAIN)``). Semantics follow onnxruntime's CPU
kernels, which is what these exporters test against, including its corners: a binary
classifier with one score column gets the second column the way onnxruntime writes it, and
PROBIT uses onnxruntime's approximate inverse error function. Labels are int64 tensors, or
engine string tensors (``bytes``) where the model's class labels are strings.

**ZipMap.** ONNX's ZipMap turns the [N, classes] probability tensor into a sequence of
``{label: probability}`` maps, which is not a tensor. The engine imports it as the
probability tensor itself: the graph output keeps its name (e.g. ``output_probability``) and
holds a float32 [N, classes] tensor whose column ``j`` is the probability of the j-th class
label of the ZipMap (the classifier's class order, the same order as its ``label`` values).
Servers therefore answer with a list of rows instead of a list of dicts. To get the same
output from onnxruntime and from the engine, export with ``options={'zipmap': False}``
(skl2onnx) or ``zipmap=False`` (onnxmltools).

Operators not mapped: ``CastMap`` and ``DictVectorizer`` (they take maps as inputs), the
ai.onnx.ml opset 5 ``TreeEnsemble``; they are named in the import's unsupported report.
"""

from __future__ import annotations

import math

import numpy as np

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import ML_DOMAIN, UnsupportedModelError, register
from engine.formats.onnx.tensors import OnnxFormatError
from engine.framework.graph import Tensor, control_dependencies
from engine.ops.logging_ops import Assert
from engine.ops.reduction import reduce_all, reduce_any

__all__ = ["MAX_ML_ENTRIES"]

# Dense tables built from a node's attributes (coefficients, one-hot categories, label maps,
# tree leaf weights) are bounded: a damaged or hostile file cannot make the importer allocate
# more than this many entries for one node.
MAX_ML_ENTRIES = 1 << 25
TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT")


# -----------------------------------------------------------------------------------------
# Shared helpers (also used by mapping_ml_trees.py and mapping_ml_svm.py)
# -----------------------------------------------------------------------------------------


def where(node: dict) -> str:
    return f"{node.get('op_type')} node {node.get('name', '')!r}"


def bounded(count: int, node: dict, what: str, limit: int = MAX_ML_ENTRIES) -> int:
    if count < 0 or count > limit:
        raise UnsupportedModelError(f"{where(node)}: {what} is {count}, more than {limit}")
    return count


def floats(ctx, node: dict, name: str, default=None) -> np.ndarray | None:
    """A float attribute list (or its ``<name>_as_tensor`` form) as a float32 vector."""
    value = ctx.attr(node, f"{name}_as_tensor", None)
    if value is None:
        value = ctx.attr(node, name, default)
    if value is None:
        return None
    out = np.asarray(value, dtype=np.float64).reshape(-1)
    bounded(out.size, node, f"the length of {name}")
    return out.astype(np.float32)


def ints(ctx, node: dict, name: str, default=None) -> np.ndarray | None:
    value = ctx.attr(node, name, default)
    if value is None:
        return None
    out = np.asarray(value, dtype=np.int64).reshape(-1)
    bounded(out.size, node, f"the length of {name}")
    return out


def transform_name(ctx, node: dict) -> str:
    name = ctx.attr(node, "post_transform", "NONE")
    name = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
    if name not in TRANSFORMS:
        raise UnsupportedModelError(
            f"{where(node)}: post_transform {name!r}, expected one of {TRANSFORMS}"
        )
    return name


def class_labels(ctx, node: dict, ints_name: str, strings_name: str) -> np.ndarray | None:
    """The class labels: int64, or strings as an object array of bytes; None when absent."""
    strings = ctx.attr(node, strings_name, None)
    if strings:
        bounded(len(strings), node, f"the length of {strings_name}")
        out = np.empty(len(strings), dtype=object)
        out[:] = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in strings]
        return out
    labels = ints(ctx, node, ints_name)
    return labels if labels is not None and labels.size else None


def label_of(index: Tensor, labels: np.ndarray) -> Tensor:
    """``labels[index]`` for an int index tensor (int64 or string labels)."""
    return tf.gather(tf.constant(labels), index)


def as_float(x: Tensor) -> Tensor:
    return x if x.dtype.base_dtype == tf.float32 else tf.cast(x, tf.float32)


def rows(ctx, node: dict, x: Tensor, features: int | None = None) -> Tensor:
    """``x`` as a float32 [N, features] matrix; a vector is one row (onnxruntime's reading)."""
    x = as_float(x)
    rank = x.shape.ndims
    if rank == 2:
        return x
    if rank == 1:
        return tf.expand_dims(x, 0)
    if features is None:
        raise UnsupportedModelError(f"{where(node)} needs a matrix input, got rank {rank}")
    return tf.reshape(x, tf.constant(np.array([-1, features], dtype=np.int64)))


def _scalar(value: float) -> Tensor:
    return tf.constant(np.float32(value))


def logistic(s: Tensor) -> Tensor:
    """onnxruntime's ComputeLogistic: 1/(1+exp(-|s|)), mirrored for negative s."""
    v = tf.reciprocal(tf.add(_scalar(1.0), tf.exp(tf.negative(tf.abs(s)))))
    return tf.where_v2(tf.less(s, _scalar(0.0)), tf.subtract(_scalar(1.0), v), v)


def probit(s: Tensor) -> Tensor:
    """onnxruntime's ComputeProbit: sqrt(2) * ErfInv(2s - 1) with its approximate ErfInv."""
    y = tf.subtract(tf.multiply(_scalar(2.0), s), _scalar(1.0))
    sign = tf.where_v2(tf.less(y, _scalar(0.0)), _scalar(-1.0), _scalar(1.0))
    log = tf.log(tf.multiply(tf.subtract(_scalar(1.0), y), tf.add(_scalar(1.0), y)))
    v = tf.add(_scalar(2.0 / (math.pi * 0.147)), tf.multiply(_scalar(0.5), log))
    v2 = tf.multiply(_scalar(1.0 / 0.147), log)
    v3 = tf.add(tf.negative(v), tf.sqrt(tf.subtract(tf.multiply(v, v), v2)))
    return tf.multiply(_scalar(math.sqrt(2.0)), tf.multiply(sign, tf.sqrt(v3)))


def softmax_zero(s: Tensor) -> Tensor:
    """onnxruntime's ComputeSoftmaxZero: values within 1e-7 of zero stay (almost) zero and are
    left out of the sum."""
    top = tf.reduce_max(s, axis=-1, keepdims=True)
    nonzero = tf.greater(tf.abs(s), _scalar(1e-7))
    e = tf.where_v2(nonzero, tf.exp(tf.subtract(s, top)), tf.multiply(s, tf.exp(tf.negative(top))))
    total = tf.reduce_sum(tf.where_v2(nonzero, e, _scalar(0.0)), axis=-1, keepdims=True)
    return tf.realdiv(e, total)


def post_transform(scores: Tensor, name: str) -> Tensor:
    """A [N, K] score matrix (K >= 2) through the named post transform."""
    if name == "LOGISTIC":
        return logistic(scores)
    if name == "SOFTMAX":
        top = tf.reduce_max(scores, axis=-1, keepdims=True)
        e = tf.exp(tf.subtract(scores, top))
        return tf.realdiv(e, tf.reduce_sum(e, axis=-1, keepdims=True))
    if name == "SOFTMAX_ZERO":
        return softmax_zero(scores)
    if name == "PROBIT":
        return probit(scores)
    return tf.identity(scores)


def second_column(score: Tensor, mode: str, transform: str) -> Tensor:
    """onnxruntime's two-column scores from one binary score column [N, 1]: ``"complement"``
    writes [1-s, s], ``"mirror"`` writes [-s, s] (logistic of both under LOGISTIC)."""
    if mode == "complement":
        return tf.concat([tf.subtract(_scalar(1.0), score), score], 1)
    if transform == "LOGISTIC":
        return tf.concat([logistic(tf.negative(score)), logistic(score)], 1)
    return tf.concat([tf.negative(score), score], 1)


def first_argmax(scores: Tensor) -> Tensor:
    """The first index of each row's maximum (onnxruntime's strict ``>`` scan)."""
    return tf.argmax(scores, axis=-1, output_type=tf.int64)


# -----------------------------------------------------------------------------------------
# Linear models
# -----------------------------------------------------------------------------------------


def _linear_scores(ctx, node, targets: int | None):
    coefficients = floats(ctx, node, "coefficients")
    if coefficients is None or not coefficients.size:
        raise OnnxFormatError(f"{where(node)} has no coefficients")
    intercepts = floats(ctx, node, "intercepts")
    if targets is None:
        targets = intercepts.size if intercepts is not None and intercepts.size else None
    x = ctx.input(node, 0)
    features = x.shape.dims[-1].value if x.shape.ndims else None
    if targets is None:
        if not features:
            raise UnsupportedModelError(f"{where(node)} without intercepts needs a known width")
        targets = coefficients.size // features
    if targets < 1 or coefficients.size % targets:
        raise OnnxFormatError(
            f"{where(node)}: {coefficients.size} coefficients for {targets} targets"
        )
    weights = coefficients.reshape(targets, -1)
    if intercepts is None or not intercepts.size:
        intercepts = np.zeros(targets, np.float32)
    if intercepts.size != targets:
        raise OnnxFormatError(f"{where(node)}: {intercepts.size} intercepts for {targets} targets")
    x = rows(ctx, node, x, weights.shape[1])
    scores = tf.add(
        tf.matmul(x, tf.constant(np.ascontiguousarray(weights.T))), tf.constant(intercepts)
    )
    return scores, targets


def _linear_regressor(ctx, node):
    targets = int(ctx.attr(node, "targets", 1))
    bounded(targets, node, "targets")
    scores, _ = _linear_scores(ctx, node, targets)
    if transform_name(ctx, node) == "PROBIT":
        scores = probit(scores)
    elif transform_name(ctx, node) != "NONE":
        raise UnsupportedModelError(f"{where(node)}: post_transform must be NONE or PROBIT")
    return [scores]


def _linear_classifier(ctx, node):
    labels = class_labels(ctx, node, "classlabels_ints", "classlabels_strings")
    if labels is None:
        raise OnnxFormatError(f"{where(node)} has no class labels")
    transform = transform_name(ctx, node)
    scores, count = _linear_scores(ctx, node, None)
    if count > 1:
        if count > labels.size:
            raise OnnxFormatError(f"{where(node)}: {count} score columns, {labels.size} labels")
        return [label_of(first_argmax(scores), labels), post_transform(scores, transform)]
    # One score column (binary): the second class when the raw score is above 0; the scores
    # are [1 - y, y], y the logistic of the score under LOGISTIC and the raw score otherwise.
    if labels.size != 2:
        raise OnnxFormatError(f"{where(node)}: one score column needs exactly 2 class labels")
    if transform == "PROBIT":
        raise UnsupportedModelError(f"{where(node)}: binary PROBIT scores are not defined")
    label = label_of(tf.cast(tf.greater(scores[:, 0], _scalar(0.0)), tf.int64), labels)
    y = logistic(scores) if transform == "LOGISTIC" else scores
    return [label, second_column(y, "complement", "NONE")]


# -----------------------------------------------------------------------------------------
# Preprocessing
# -----------------------------------------------------------------------------------------


def _per_feature(values: np.ndarray, x: Tensor) -> Tensor:
    return tf.constant(values if values.size != 1 else values.reshape(()))


def _scaler(ctx, node):
    x = as_float(ctx.input(node, 0))
    offset = floats(ctx, node, "offset", [0.0])
    scale = floats(ctx, node, "scale", [1.0])
    return [tf.multiply(tf.subtract(x, _per_feature(offset, x)), _per_feature(scale, x))]


def _normalizer(ctx, node):
    # onnxruntime: a row whose norm is 0 is copied; L2 is sign(x) * sqrt(x^2 / sum(x^2)).
    x = as_float(ctx.input(node, 0))
    if x.shape.ndims is not None and x.shape.ndims > 2:
        raise UnsupportedModelError(f"{where(node)}: input of rank {x.shape.ndims}, at most 2")
    norm = ctx.attr(node, "norm", "MAX")
    if norm == "MAX":
        total = tf.reduce_max(x, axis=-1, keepdims=True)
    elif norm == "L1":
        total = tf.reduce_sum(tf.abs(x), axis=-1, keepdims=True)
    elif norm == "L2":
        total = tf.reduce_sum(tf.multiply(x, x), axis=-1, keepdims=True)
    else:
        raise UnsupportedModelError(f"{where(node)}: norm {norm!r}, expected MAX, L1 or L2")
    nonzero = tf.not_equal(total, _scalar(0.0))
    safe = tf.where_v2(nonzero, total, _scalar(1.0))
    if norm == "L2":
        root = tf.sqrt(tf.realdiv(tf.multiply(x, x), safe))
        y = tf.where_v2(tf.less(x, _scalar(0.0)), tf.negative(root), root)
    else:
        y = tf.realdiv(x, safe)
    return [tf.where_v2(nonzero, y, x)]


def _binarizer(ctx, node):
    x = ctx.input(node, 0)
    dt = x.dtype.base_dtype
    threshold = tf.constant(np.asarray(ctx.attr(node, "threshold", 0.0), dtype=dt.as_numpy_dtype))
    one, zero = (tf.constant(np.asarray(v, dtype=dt.as_numpy_dtype)) for v in (1, 0))
    return [tf.where_v2(tf.greater(x, threshold), one, zero)]


def _imputer(ctx, node):
    x = ctx.input(node, 0)
    dt = x.dtype.base_dtype
    if dt.is_floating:
        values = floats(ctx, node, "imputed_value_floats", [])
        replaced = float(ctx.attr(node, "replaced_value_float", 0.0))
        missing = (
            tf.is_nan(x)
            if math.isnan(replaced)
            else tf.equal(x, tf.constant(np.asarray(replaced, dt.as_numpy_dtype)))
        )
    else:
        values = ints(ctx, node, "imputed_value_int64s", [])
        replaced = int(ctx.attr(node, "replaced_value_int64", 0))
        missing = tf.equal(x, tf.constant(np.asarray(replaced, dt.as_numpy_dtype)))
    if values is None or not values.size:
        raise OnnxFormatError(f"{where(node)} has no imputed values")
    fill = tf.constant(
        np.asarray(values, dt.as_numpy_dtype).reshape(() if values.size == 1 else -1)
    )
    return [tf.where_v2(missing, fill, x)]


def _array_feature_extractor(ctx, node):
    x, indices = ctx.input(node, 0), ctx.input(node, 1)
    indices = tf.reshape(tf.cast(indices, tf.int64), tf.constant(np.array([-1], np.int64)))
    # onnxruntime fails the run on an empty index list.
    check = Assert(tf.greater(tf.size(indices), 0), ["Invalid Y argument: num_indices = 0"])
    with control_dependencies([check]):
        indices = tf.identity(indices)
    if x.shape.ndims == 1:
        x = tf.expand_dims(x, 0)
    return [tf.gather(x, indices, axis=-1)]


def _feature_vectorizer(ctx, node):
    dims = ints(ctx, node, "inputdimensions", [])
    names = node.get("input", [])
    if len(dims) != len(names):
        raise OnnxFormatError(f"{where(node)}: {len(names)} inputs, {len(dims)} inputdimensions")
    parts = []
    for i, d in enumerate(dims):
        shape = tf.constant(np.array([-1, int(d)], np.int64))
        parts.append(tf.reshape(as_float(ctx.input(node, i)), shape))
    return [tf.concat(parts, 1) if len(parts) > 1 else tf.identity(parts[0])]


# -----------------------------------------------------------------------------------------
# Encoders: OneHotEncoder, LabelEncoder, CategoryMapper
# -----------------------------------------------------------------------------------------


def _string_array(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
    return out


def match(x: Tensor, keys: np.ndarray) -> tuple[Tensor, Tensor]:
    """For each element of ``x``: whether it is one of ``keys`` and the (first) position.
    Compares against every key at once ([..., K] booleans): fine for category lists."""
    eq = tf.equal(tf.expand_dims(x, -1), tf.constant(keys))
    if keys.dtype.kind == "f" and np.isnan(keys).any():
        nan_key = tf.constant(np.isnan(keys))
        eq = tf.logical_or(eq, tf.logical_and(tf.expand_dims(tf.is_nan(x), -1), nan_key))
    found = reduce_any(eq, axis=-1)
    return found, tf.argmax(tf.cast(eq, tf.int32), axis=-1, output_type=tf.int64)


def lookup(x: Tensor, keys: np.ndarray, values: np.ndarray, default) -> Tensor:
    found, position = match(x, keys)
    hit = tf.gather(tf.constant(values), position)
    return tf.where_v2(found, hit, tf.constant(np.asarray(default, dtype=values.dtype)))


def _one_hot_encoder(ctx, node):
    x = ctx.input(node, 0)
    strings = ctx.attr(node, "cats_strings", None)
    if x.dtype.base_dtype == dtypes.string:
        cats = _string_array(strings or [])
    else:
        cats = ints(ctx, node, "cats_int64s", [])
        x = tf.cast(x, tf.int64)
    if not len(cats):
        raise OnnxFormatError(f"{where(node)} has no categories for its {x.dtype.name} input")
    hits = tf.equal(tf.expand_dims(x, -1), tf.constant(cats))
    if ctx.attr(node, "zeros", 1):
        return [tf.cast(hits, tf.float32)]
    # zeros=0: an unknown category fails the run, as in onnxruntime.
    message = f"{where(node)}: a value is not one of its {len(cats)} categories (zeros=0)"
    check = Assert(reduce_all(reduce_any(hits, axis=-1)), [tf.constant(message)])
    with control_dependencies([check]):
        return [tf.cast(hits, tf.float32)]


def _keys_values(ctx, node, kind: str):
    """LabelEncoder opset 2/4 ``keys_*``/``values_*`` (or ``*_tensor``) as arrays."""
    tensor = ctx.attr(node, f"{kind}_tensor", None)
    if tensor is not None:
        array = np.asarray(tensor).reshape(-1)
        return _string_array(array) if array.dtype.kind in "OSU" else array
    for suffix, dtype in (("strings", None), ("int64s", np.int64), ("floats", np.float32)):
        value = ctx.attr(node, f"{kind}_{suffix}", None)
        if value:
            return _string_array(value) if dtype is None else np.asarray(value, dtype=dtype)
    return None


def _label_default(ctx, node, values: np.ndarray):
    tensor = ctx.attr(node, "default_tensor", None)
    if tensor is not None:
        default = np.asarray(tensor).reshape(-1)[0]
        return default.encode("utf-8") if isinstance(default, str) else default
    if values.dtype == object:
        return ctx.attr(node, "default_string", "_Unused").encode("utf-8")
    if values.dtype.kind == "f":
        return np.float32(ctx.attr(node, "default_float", -0.0))
    return np.int64(ctx.attr(node, "default_int64", -1))


def _label_encoder(ctx, node, nan_keys_match: bool = True):
    x = ctx.input(node, 0)
    keys, values = _keys_values(ctx, node, "keys"), _keys_values(ctx, node, "values")
    if keys is None or values is None or len(keys) != len(values):
        raise OnnxFormatError(f"{where(node)}: keys and values must be given, of equal length")
    bounded(len(keys), node, "the number of keys")
    if (keys.dtype == object) != (x.dtype.base_dtype == dtypes.string):
        raise OnnxFormatError(f"{where(node)}: {x.dtype.name} input for {keys.dtype} keys")
    if keys.dtype != object:
        keys = keys.astype(x.dtype.base_dtype.as_numpy_dtype)
    default = _label_default(ctx, node, values)
    if not nan_keys_match and keys.dtype.kind == "f":
        # Before ai.onnx.ml opset 4 a NaN key matches nothing (onnxruntime's hash map).
        keys, values = keys[~np.isnan(keys)], values[~np.isnan(keys)]
        if not len(keys):
            return [tf.fill(tf.shape(x), tf.constant(np.asarray(default, values.dtype)))]
    return [lookup(x, keys, values, default)]


def _label_encoder_v2(ctx, node):
    return _label_encoder(ctx, node, nan_keys_match=False)


def _label_encoder_v1(ctx, node):
    x = ctx.input(node, 0)
    classes = _string_array(ctx.attr(node, "classes_strings", []))
    bounded(len(classes), node, "the number of classes")
    if x.dtype.base_dtype == dtypes.string:
        positions = np.arange(len(classes), dtype=np.int64)
        return [lookup(x, classes, positions, np.int64(ctx.attr(node, "default_int64", -1)))]
    default = ctx.attr(node, "default_string", "_Unused").encode("utf-8")
    positions = np.arange(len(classes), dtype=np.int64)
    return [lookup(tf.cast(x, tf.int64), positions, classes, default)]


def _category_mapper(ctx, node):
    x = ctx.input(node, 0)
    strings = _string_array(ctx.attr(node, "cats_strings", []))
    numbers = ints(ctx, node, "cats_int64s", [])
    if len(strings) != len(numbers) or not len(strings):
        raise OnnxFormatError(f"{where(node)}: cats_strings and cats_int64s differ in length")
    if x.dtype.base_dtype == dtypes.string:
        return [lookup(x, strings, numbers, np.int64(ctx.attr(node, "default_int64", -1)))]
    default = ctx.attr(node, "default_string", "_Unused").encode("utf-8")
    return [lookup(tf.cast(x, tf.int64), numbers, strings, default)]


def _zip_map(ctx, node):
    # See the module docstring: the probability tensor stands for the sequence of maps.
    labels = class_labels(ctx, node, "classlabels_int64s", "classlabels_strings")
    x = as_float(ctx.input(node, 0))
    if labels is None:
        raise OnnxFormatError(f"{where(node)} has no class labels")
    return [tf.identity(x)]


def _register(op_type: str, versions: tuple[int, ...], rows) -> None:
    register(op_type, versions, rows, domain=ML_DOMAIN)


_register("LinearRegressor", (1,), _linear_regressor)
_register("LinearClassifier", (1,), _linear_classifier)
_register("Scaler", (1,), _scaler)
_register("Normalizer", (1,), _normalizer)
_register("Binarizer", (1,), _binarizer)
_register("Imputer", (1,), _imputer)
_register("ArrayFeatureExtractor", (1,), _array_feature_extractor)
_register("FeatureVectorizer", (1,), _feature_vectorizer)
_register("OneHotEncoder", (1,), _one_hot_encoder)
_register(
    "LabelEncoder", (1, 2, 4), {1: _label_encoder_v1, 2: _label_encoder_v2, 4: _label_encoder}
)
_register("CategoryMapper", (1,), _category_mapper)
_register("ZipMap", (1,), _zip_map)
