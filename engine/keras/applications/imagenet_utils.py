"""What every ``tf.keras.applications`` family shares: ImageNet preprocessing (``caffe``,
``tf`` and ``torch`` modes), ``decode_predictions`` from Keras' cached class index, the input
shape rules (``obtain_input_shape``), the argument checks and the lookup of pretrained weight
files in Keras' cache (``~/.keras/models`` or ``$KERAS_HOME/models``). The engine never
downloads: a file that is not in the cache is a ``FileNotFoundError`` that names it.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np

from engine.framework.constant_op import constant
from engine.keras import backend, utils
from engine.keras.core import Dense
from engine.keras.input_layer import Input
from engine.keras.layers_pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
from engine.keras.network import Model
from engine.ops import math as math_ops

__all__ = ["decode_predictions", "preprocess_input"]

CLASS_INDEX_FILE = "imagenet_class_index.json"
_MAX_CLASS_INDEX_BYTES = 1 << 20  # Keras' file is about 35 kB
_MEANS = {
    "caffe": ([103.939, 116.779, 123.68], None),
    "torch": (
        [0.485, 0.456, 0.406],
        [0.229, 0.224, 0.225],
    ),
}


def models_dir() -> str:
    """Where Keras keeps the files ``get_file(..., cache_subdir='models')`` downloaded."""
    base = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(base, "models")


def cached_file(name: str, what: str) -> str:
    """The path of Keras' cached ``name``; a FileNotFoundError saying where to put it if absent."""
    path = os.path.join(models_dir(), name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{what}: {path} is not there. The engine does not download files; place Keras' "
            f"{name} there (the file tf.keras downloads), or set KERAS_HOME to the folder "
            "whose models/ holds it."
        )
    return path


# -- preprocessing -------------------------------------------------------------------------


def preprocess_input(x, data_format=None, mode="caffe"):
    """Scales a batch of RGB images in [0, 255] as an ImageNet model was trained on them.

    ``caffe``: RGB to BGR, then minus the ImageNet channel means; ``tf``: to [-1, 1];
    ``torch``: to [0, 1], then minus the means and over the deviations of each channel. A float
    numpy array is modified in place (as Keras does); other inputs are symbolic tensors.
    """
    if mode not in ("caffe", "tf", "torch"):
        raise ValueError(f"Expected mode to be one of `caffe`, `tf` or `torch`. Received: {mode!r}")
    if data_format is None:
        data_format = backend.image_data_format()
    elif data_format not in ("channels_first", "channels_last"):
        raise ValueError(
            "Expected data_format to be one of `channels_first` or `channels_last`. "
            f"Received: {data_format!r}"
        )
    if isinstance(x, np.ndarray):
        return _preprocess_numpy(x, data_format, mode)
    return _preprocess_symbolic(x, data_format, mode)


def _channels_axis(ndim: int, data_format: str) -> int:
    return (0 if ndim == 3 else 1) if data_format == "channels_first" else ndim - 1


def _flip_channels(x, ndim: int, data_format: str):
    index = [slice(None)] * ndim
    index[_channels_axis(ndim, data_format)] = slice(None, None, -1)
    return x[tuple(index)]


def _preprocess_numpy(x: np.ndarray, data_format: str, mode: str) -> np.ndarray:
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype(backend.floatx(), copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
    else:
        x = _flip_channels(x, x.ndim, data_format)
    mean, std = _MEANS[mode]
    axis = _channels_axis(x.ndim, data_format)
    for c in range(3):
        index = [slice(None)] * x.ndim
        index[axis] = c
        x[tuple(index)] -= mean[c]
        if std is not None:
            x[tuple(index)] /= std[c]
    return x


def _preprocess_symbolic(x, data_format: str, mode: str):
    if mode == "tf":
        return x / 127.5 - 1.0
    if mode == "torch":
        x = x / 255.0
    else:
        x = _flip_channels(x, backend.ndim(x), data_format)
    mean, std = _MEANS[mode]
    shape = (3, 1, 1) if data_format == "channels_first" else (3,)
    x = x + constant(-np.reshape(mean, shape), dtype=x.dtype.base_dtype)
    if std is not None:
        x = math_ops.truediv(x, constant(np.reshape(std, shape), dtype=x.dtype.base_dtype))
    return x


# -- decoding ------------------------------------------------------------------------------


def _read_class_index(path: str) -> dict:
    """Keras' ``{"0": ["n01440764", "tench"], ...}``, checked: 1000 classes of two strings."""
    if os.path.getsize(path) > _MAX_CLASS_INDEX_BYTES:
        raise ValueError(f"{path} is larger than {_MAX_CLASS_INDEX_BYTES} bytes")
    with open(path, encoding="utf-8") as f:
        try:
            index = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not JSON: {e}") from None
    if not isinstance(index, dict) or sorted(index, key=str) != sorted(map(str, range(1000))):
        raise ValueError(f"{path}: expected an object with the keys '0' to '999'")
    for key, value in index.items():
        if not (
            isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)
        ):
            raise ValueError(
                f"{path}: class {key} should be [wordnet_id, name], both strings; got {value!r}"
            )
    return index


def decode_predictions(preds, top=5) -> list:
    """The ``top`` classes of each row of ``preds`` (shape (samples, 1000)) as
    ``(wordnet_id, name, score)``, best first, named from Keras' cached class index."""
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError(
            "`decode_predictions` expects a batch of predictions (i.e. a 2D array of shape "
            f"(samples, 1000)). Found array with shape: {preds.shape}"
        )
    index = _read_class_index(cached_file(CLASS_INDEX_FILE, "decode_predictions"))
    results = []
    for pred in preds:
        top_indices = pred.argsort()[-top:][::-1]
        result = [(*index[str(i)], pred[i]) for i in top_indices]
        result.sort(key=lambda r: r[2], reverse=True)
        results.append(result)
    return results


# -- model arguments -----------------------------------------------------------------------


def check_weights(weights, include_top: bool, classes: int) -> None:
    """Keras' checks of ``weights`` (None, 'imagenet' or an existing file) and ``classes``."""
    if not (
        weights in ("imagenet", None) or (isinstance(weights, str) and os.path.isfile(weights))
    ):
        raise ValueError(
            "The `weights` argument should be either `None` (random initialization), "
            "`imagenet` (pre-training on ImageNet), or the path to the weights file to be "
            f"loaded. Received: weights={weights!r}"
        )
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(
            'If using `weights` as `"imagenet"` with `include_top` as true, `classes` should '
            f"be 1000. Received: classes={classes}"
        )


def check_activation(classifier_activation, weights) -> None:
    """Pretrained weights allow only a softmax (or no) activation on the classifier."""
    if weights is not None and classifier_activation not in ("softmax", None):
        raise ValueError(
            "Only `None` and `softmax` activations are allowed for the "
            "`classifier_activation` argument when using pretrained weights, with "
            f"`include_top=True`; Received: classifier_activation={classifier_activation!r}"
        )


def _default_shape(input_shape, default_size: int, data_format: str, weights) -> tuple:
    channels = 3
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        channels = input_shape[0] if data_format == "channels_first" else input_shape[-1]
        if channels not in (1, 3):
            warnings.warn(
                "This model usually expects 1 or 3 input channels. However, it was passed an "
                f"input_shape with {channels} input channels.",
                stacklevel=3,
            )
    if data_format == "channels_first":
        return (channels, default_size, default_size)
    return (default_size, default_size, channels)


def _check_given_shape(input_shape, min_size: int, data_format: str, weights) -> None:
    if len(input_shape) != 3:
        raise ValueError(
            f"`input_shape` must be a tuple of three integers. Received: {input_shape}"
        )
    first = data_format == "channels_first"
    channels = input_shape[0] if first else input_shape[-1]
    if channels != 3 and weights == "imagenet":
        raise ValueError(f"The input must have 3 channels; Received `input_shape={input_shape}`")
    spatial = input_shape[1:] if first else input_shape[:2]
    if any(s is not None and s < min_size for s in spatial):
        raise ValueError(
            f"Input size must be at least {min_size}x{min_size}; Received: "
            f"input_shape={input_shape}"
        )


def obtain_input_shape(
    input_shape, default_size, min_size, data_format, require_flatten, weights=None
) -> tuple:
    """The model's input shape (without batch), validated as Keras does: imagenet weights with
    the classifier need exactly the default shape; any given shape has 3 dimensions and spatial
    sizes of at least ``min_size``; a classifier needs a static shape."""
    if input_shape is not None:
        input_shape = tuple(input_shape)
    default_shape = _default_shape(input_shape, default_size, data_format, weights)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and input_shape != default_shape:
            raise ValueError(
                "When setting `include_top=True` and loading `imagenet` weights, "
                f"`input_shape` should be {default_shape}. Received: input_shape={input_shape}"
            )
        return default_shape
    if input_shape:
        _check_given_shape(input_shape, min_size, data_format, weights)
    elif require_flatten:
        input_shape = default_shape
    else:
        input_shape = (3, None, None) if data_format == "channels_first" else (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError(
            "If `include_top` is True, you should specify a static `input_shape`. "
            f"Received: input_shape={input_shape}"
        )
    return input_shape


def image_input(input_tensor, input_shape):
    """The model's input: a new ``Input``, or ``input_tensor`` (wrapped when not Keras')."""
    if input_tensor is None:
        return Input(shape=input_shape)
    if not backend.is_keras_tensor(input_tensor):
        return Input(tensor=input_tensor, shape=input_shape)
    return input_tensor


def correct_pad(inputs, kernel_size) -> tuple:
    """The zero padding that makes a stride-2 'valid' convolution match TF's 'same'."""
    img_dim = 2 if backend.image_data_format() == "channels_first" else 1
    input_size = backend.int_shape(inputs)[img_dim : img_dim + 2]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if input_size[0] is None else (1 - input_size[0] % 2, 1 - input_size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def pool_features(x, pooling, avg_name=None, max_name=None):
    """``pooling='avg'``/``'max'`` on the features of a model built without its classifier."""
    if pooling == "avg":
        return GlobalAveragePooling2D(name=avg_name)(x)
    if pooling == "max":
        return GlobalMaxPooling2D(name=max_name)(x)
    return x


def classifier_top(
    x, include_top, classes, classifier_activation, weights, pooling, gap_name=None,
    pool_names=(None, None),
):  # fmt: skip
    """The end shared by most families: global average pooling and the ``predictions`` Dense
    layer with the model, or the ``pooling`` of the features without it."""
    if not include_top:
        return pool_features(x, pooling, *pool_names)
    x = GlobalAveragePooling2D(name=gap_name)(x)
    check_activation(classifier_activation, weights)
    return Dense(classes, activation=classifier_activation, name="predictions")(x)


def finish(img_input, input_tensor, x, name: str, weights, weight_file: str | None) -> Model:
    """The ``Model`` from the image input (or ``input_tensor``'s sources) to ``x``, with its
    weights loaded: ``weight_file`` from Keras' cache for 'imagenet', else the given file."""
    inputs = utils.get_source_inputs(input_tensor) if input_tensor is not None else img_input
    model = Model(inputs, x, name=name)
    if weights == "imagenet":
        if weight_file is None:
            raise ValueError(f"{name} has no imagenet weights to load")
        model.load_weights(cached_file(weight_file, f"{name}(weights='imagenet')"))
    elif weights is not None:
        model.load_weights(weights)
    return model
