"""``tf.keras.preprocessing.image``: ``ImageDataGenerator`` (rescaling, sample- and
feature-wise centering and normalization, ZCA whitening, random rotation/shift/shear/zoom,
channel and brightness shifts, flips), its ``flow`` over arrays and ``flow_from_directory``
over PNG/JPEG/BMP files, and ``img_to_array``/``array_to_img``/``load_img``/``save_img``.

Random draws are TF's, in TF's order, from ``np.random`` (seeded per batch by ``flow``'s
``seed``), so the same seeds pick the same transforms and flips. TF samples the affine
transforms with SciPy's ``ndimage.affine_transform``; here a numpy sampler does it (order 0
nearest or 1 bilinear; fill modes ``nearest``, ``constant``, ``reflect`` and ``wrap``,
where ``wrap`` is the plain period-n wrap), so transformed pixels can differ from SciPy's
near the borders. Images are read with Pillow (an optional dependency); an image larger
than ``MAX_IMAGE_PIXELS`` is refused before its pixels are decoded.
"""

from __future__ import annotations

import io
import os
import pathlib

import numpy as np

from engine.keras import backend
from engine.keras.preprocessing_affine import apply_affine_transform
from engine.keras.utils import Sequence

try:
    from PIL import Image, ImageEnhance
except ImportError:  # Pillow is optional: only the file functions need it
    Image = ImageEnhance = None

__all__ = [
    "DirectoryIterator",
    "ImageDataGenerator",
    "Iterator",
    "NumpyArrayIterator",
    "apply_affine_transform",
    "array_to_img",
    "img_to_array",
    "load_img",
    "save_img",
]

MAX_IMAGE_PIXELS = 1 << 26
IMAGE_FORMATS = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")
_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _require_pil(what: str) -> None:
    if Image is None:
        raise ImportError(f"{what} needs Pillow (pip install pillow)")


def _data_format(data_format):
    data_format = data_format or backend.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(
            f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}"
        )
    return data_format


def img_to_array(img, data_format=None, dtype=None) -> np.ndarray:
    """A PIL image (or array) as a (rows, cols, channels) array (channels first on
    request)."""
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=dtype or backend.floatx())
    if x.ndim == 2:
        x = x[None] if data_format == "channels_first" else x[:, :, None]
    elif x.ndim == 3:
        x = x.transpose(2, 0, 1) if data_format == "channels_first" else x
    else:
        raise ValueError(f"Unsupported image shape: {x.shape}")
    return x


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A rank-3 array as a PIL image (RGBA, RGB, L, or I above 255); ``scale`` stretches
    its values to 0..255 first."""
    _require_pil("array_to_img")
    x = np.asarray(x, dtype=dtype or backend.floatx())
    if x.ndim != 3:
        raise ValueError(
            f"Expected image array to have rank 3 (single image). Got array with shape: {x.shape}"
        )
    if _data_format(data_format) == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x /= top
        x *= 255
    channels = x.shape[2]
    if channels in (3, 4):
        return Image.fromarray(x.astype("uint8"), "RGBA" if channels == 4 else "RGB")
    if channels == 1:
        if np.max(x) > 255:
            return Image.fromarray(x[:, :, 0].astype("int32"), "I")
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {channels}")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs) -> None:
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format in ("jpg", "jpeg"):
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def _open_image(path):
    if isinstance(path, io.BytesIO):
        return Image.open(path)
    if isinstance(path, (pathlib.Path, bytes, str)):
        with open(path, "rb") as f:
            return Image.open(io.BytesIO(f.read()))
    raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")


def load_img(path, grayscale=False, color_mode="rgb", target_size=None, interpolation="nearest"):
    """An image file as a PIL image in ``color_mode`` (grayscale, rgb, rgba), resized to
    ``target_size`` (rows, cols) with PIL's ``interpolation``."""
    _require_pil("load_img")
    color_mode = "grayscale" if grayscale else color_mode
    if color_mode not in ("grayscale", "rgb", "rgba"):
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba"')
    img = _open_image(path)
    width, height = img.size
    if width * height > MAX_IMAGE_PIXELS:
        raise ValueError(
            f"image {path!r} is {width}x{height} pixels, more than MAX_IMAGE_PIXELS "
            f"({MAX_IMAGE_PIXELS})"
        )
    if color_mode == "grayscale" and img.mode not in ("L", "I;16", "I"):
        img = img.convert("L")
    elif color_mode == "rgba" and img.mode != "RGBA":
        img = img.convert("RGBA")
    elif color_mode == "rgb" and img.mode != "RGB":
        img = img.convert("RGB")
    if target_size is not None and img.size != (target_size[1], target_size[0]):
        if interpolation not in _INTERPOLATIONS:
            raise ValueError(
                f"Invalid interpolation method {interpolation} specified. Supported "
                f"methods are {', '.join(_INTERPOLATIONS)}"
            )
        method = getattr(Image.Resampling, interpolation.upper())
        img = img.resize((target_size[1], target_size[0]), method)
    return img


# -- iterators -----------------------------------------------------------------------------


class Iterator(Sequence):
    """Batches of indices over ``n`` samples, as a Sequence (``fit_generator``) and as a
    Python iterator; ``shuffle`` permutes with ``np.random`` each epoch, seeded per batch
    by ``seed + batches seen`` when a seed is given (as TF's)."""

    white_list_formats = IMAGE_FORMATS

    def __init__(self, n, batch_size, shuffle, seed):
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.n, self.batch_size, self.seed, self.shuffle = n, int(batch_size), seed, shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.index_array = None
        self.index_generator = self._flow_index()

    def _set_index_array(self) -> None:
        self.index_array = np.random.permutation(self.n) if self.shuffle else np.arange(self.n)

    def __getitem__(self, idx):
        if idx >= len(self):
            raise ValueError(
                f"Asked to retrieve element {idx}, but the Sequence has length {len(self)}"
            )
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        part = self.index_array[self.batch_size * idx : self.batch_size * (idx + 1)]
        return self._get_batches_of_transformed_samples(part)

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self) -> None:
        self._set_index_array()

    def reset(self) -> None:
        self.batch_index = 0

    def _flow_index(self):
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            current = (self.batch_index * self.batch_size) % self.n if self.n else 0
            self.batch_index = self.batch_index + 1 if self.n > current + self.batch_size else 0
            self.total_batches_seen += 1
            yield self.index_array[current : current + self.batch_size]

    def __iter__(self):
        return self

    def __next__(self):
        return self._get_batches_of_transformed_samples(next(self.index_generator))

    next = __next__

    def _get_batches_of_transformed_samples(self, index_array):
        raise NotImplementedError

    def _transformed(self, x):
        gen = self.image_data_generator
        if gen is None:
            return x
        x = gen.apply_transform(x.astype(self.dtype), gen.get_random_transform(x.shape))
        return gen.standardize(x)


def _same_length(x, other, what: str) -> None:
    if other is not None and len(x) != len(other):
        raise ValueError(
            f"`x` (images tensor) and `{what}` should have the same length. Found: "
            f"x.shape = {np.asarray(x).shape}, {what}.shape = {np.asarray(other).shape}"
        )


class NumpyArrayIterator(Iterator):
    """``ImageDataGenerator.flow``: batches of transformed images from a rank-4 array, with
    ``y`` (and ``sample_weight``) when given; ``x`` may be ``[images, other arrays]``."""

    def __init__(
        self, x, y, image_data_generator, batch_size=32, shuffle=False, sample_weight=None,
        seed=None, data_format=None, subset=None, dtype=None,
    ):  # fmt: skip
        self.dtype = dtype or backend.floatx()
        self.x_misc = []
        if isinstance(x, (tuple, list)):
            misc = x[1] if isinstance(x[1], list) else [x[1]]
            self.x_misc, x = [np.asarray(m) for m in misc], x[0]
            for m in self.x_misc:
                if len(m) != len(x):
                    raise ValueError(
                        "All of the arrays in `x` should have the same length. Found a pair "
                        f"with: len(x[0]) = {len(x)}, len(x[?]) = {len(m)}"
                    )
        _same_length(x, y, "y")
        _same_length(x, sample_weight, "sample_weight")
        if subset is not None:
            x, y = self._subset(x, y, subset, image_data_generator)
        self.x = np.asarray(x, dtype=self.dtype)
        if self.x.ndim != 4:
            raise ValueError(
                f"Input data in `NumpyArrayIterator` should have rank 4. You passed an array "
                f"with shape {self.x.shape}"
            )
        self.y = None if y is None else np.asarray(y)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        self.image_data_generator = image_data_generator
        self.data_format = _data_format(data_format)
        super().__init__(self.x.shape[0], batch_size, shuffle, seed)

    def _subset(self, x, y, subset, gen):
        if subset not in ("training", "validation"):
            raise ValueError(f'Invalid subset name: {subset}; expected "training" or "validation".')
        split = int(len(x) * gen._validation_split)
        if y is not None and not np.array_equal(np.unique(y[:split]), np.unique(y[split:])):
            raise ValueError(
                "Training and validation subsets have different number of classes after the "
                "split. If your numpy arrays are sorted by the label, you might want to "
                "shuffle them."
            )
        part = slice(None, split) if subset == "validation" else slice(split, None)
        self.x_misc = [m[part] for m in self.x_misc]
        return x[part], (None if y is None else y[part])

    def _get_batches_of_transformed_samples(self, index_array):
        batch_x = np.zeros((len(index_array), *self.x.shape[1:]), dtype=self.dtype)
        for i, j in enumerate(index_array):
            batch_x[i] = self._transformed(self.x[j])
        misc = [m[index_array] for m in self.x_misc]
        first = [batch_x, *misc] if misc else batch_x
        if self.y is None:
            return first
        if self.sample_weight is None:
            return first, self.y[index_array]
        return first, self.y[index_array], self.sample_weight[index_array]


def _image_files(directory, follow_links):
    """(root, file name) of each image under ``directory``, sorted as TF lists them."""
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=lambda w: w[0]):
        for name in sorted(files):
            if name.lower().endswith(IMAGE_FORMATS):
                yield root, name


class DirectoryIterator(Iterator):
    """``ImageDataGenerator.flow_from_directory``: images under ``directory/<class>/``
    (classes sorted by name unless given), read with Pillow and resized to ``target_size``;
    labels per ``class_mode`` (categorical, binary, sparse, input, or None)."""

    allowed_class_modes = ("categorical", "binary", "sparse", "input", None)

    def __init__(
        self, directory, image_data_generator, target_size=(256, 256), color_mode="rgb",
        classes=None, class_mode="categorical", batch_size=32, shuffle=True, seed=None,
        data_format=None, follow_links=False, subset=None, interpolation="nearest",
        dtype=None,
    ):  # fmt: skip
        _require_pil("flow_from_directory")
        if color_mode not in ("rgb", "rgba", "grayscale"):
            raise ValueError(
                f'Invalid color mode: {color_mode}; expected "rgb", "rgba", or "grayscale".'
            )
        if class_mode not in self.allowed_class_modes:
            raise ValueError(
                f"Invalid class_mode: {class_mode}; expected one of {self.allowed_class_modes}"
            )
        self.image_data_generator = image_data_generator
        self.target_size, self.color_mode = tuple(target_size), color_mode
        self.data_format = _data_format(data_format)
        depth = {"rgb": 3, "rgba": 4, "grayscale": 1}[color_mode]
        self.image_shape = (
            (*self.target_size, depth)
            if self.data_format == "channels_last"
            else (depth, *self.target_size)
        )
        self.interpolation, self.class_mode = interpolation, class_mode
        self.dtype, self.directory = dtype or backend.floatx(), directory
        if not classes:
            classes = [d for d in sorted(os.listdir(directory))
                       if os.path.isdir(os.path.join(directory, d))]  # fmt: skip
        self.num_classes = len(classes)
        self.class_indices = dict(zip(classes, range(len(classes))))
        split = self._split(subset)
        self.filenames, labels = [], []
        for name in classes:
            found = list(_image_files(os.path.join(directory, name), follow_links))
            if split is not None:
                found = found[int(split[0] * len(found)) : int(split[1] * len(found))]
            for root, fname in found:
                full = os.path.join(root, fname)
                rel = os.path.relpath(full, os.path.join(directory, name))
                self.filenames.append(os.path.join(name, rel))
                labels.append(self.class_indices[name])
        self.classes = np.asarray(labels, dtype="int32")
        self.samples = len(self.filenames)
        self.filepaths = [os.path.join(directory, f) for f in self.filenames]
        print(f"Found {self.samples} images belonging to {self.num_classes} classes.")
        super().__init__(self.samples, batch_size, shuffle, seed)

    def _split(self, subset):
        if subset is None:
            return None
        v = self.image_data_generator._validation_split if self.image_data_generator else 0
        if subset not in ("training", "validation"):
            raise ValueError(f'Invalid subset name: {subset}; expected "training" or "validation"')
        return (0, v) if subset == "validation" else (v, 1)

    def _get_batches_of_transformed_samples(self, index_array):
        batch_x = np.zeros((len(index_array), *self.image_shape), dtype=self.dtype)
        for i, j in enumerate(index_array):
            img = load_img(
                self.filepaths[j],
                color_mode=self.color_mode,
                target_size=self.target_size,
                interpolation=self.interpolation,
            )
            batch_x[i] = self._transformed(img_to_array(img, data_format=self.data_format))
            img.close()
        labels = self.classes[index_array]
        if self.class_mode == "input":
            return batch_x, batch_x.copy()
        if self.class_mode in ("binary", "sparse"):
            return batch_x, labels.astype(self.dtype)
        if self.class_mode == "categorical":
            batch_y = np.zeros((len(batch_x), self.num_classes), dtype=self.dtype)
            batch_y[np.arange(len(batch_x)), labels] = 1.0
            return batch_x, batch_y
        return batch_x


# -- the generator -------------------------------------------------------------------------


def _zoom_range(zoom_range):
    if isinstance(zoom_range, (float, int)):
        return [1 - zoom_range, 1 + zoom_range]
    if len(zoom_range) == 2 and all(isinstance(v, (float, int)) for v in zoom_range):
        return [zoom_range[0], zoom_range[1]]
    raise ValueError(
        f"`zoom_range` should be a float or a tuple or list of two floats. Received: {zoom_range}"
    )


def _shift(shift_range, size):
    """A random shift as TF draws it: from the values given (an int n: 0..n-1, a list: its
    items) with a random sign, or uniform in +-range; a fraction of ``size`` below 1."""
    try:
        t = np.random.choice(shift_range)
        t *= np.random.choice([-1, 1])
    except ValueError:  # a float range
        t = np.random.uniform(-shift_range, shift_range)
    if np.max(shift_range) < 1:
        t *= size
    return t


class ImageDataGenerator:
    """Batches of augmented, normalized images (see the module docstring). Statistics for
    the feature-wise options come from :meth:`fit`."""

    def __init__(
        self, featurewise_center=False, samplewise_center=False,
        featurewise_std_normalization=False, samplewise_std_normalization=False,
        zca_whitening=False, zca_epsilon=1e-6, rotation_range=0, width_shift_range=0.0,
        height_shift_range=0.0, brightness_range=None, shear_range=0.0, zoom_range=0.0,
        channel_shift_range=0.0, fill_mode="nearest", cval=0.0, horizontal_flip=False,
        vertical_flip=False, rescale=None, preprocessing_function=None, data_format=None,
        validation_split=0.0, interpolation_order=1, dtype=None,
    ):  # fmt: skip
        self.featurewise_center = featurewise_center or zca_whitening
        self.featurewise_center |= featurewise_std_normalization
        self.samplewise_center = samplewise_center or samplewise_std_normalization
        self.featurewise_std_normalization = featurewise_std_normalization and not zca_whitening
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening, self.zca_epsilon = zca_whitening, zca_epsilon
        self.rotation_range, self.shear_range = rotation_range, shear_range
        self.width_shift_range, self.height_shift_range = width_shift_range, height_shift_range
        self.zoom_range = _zoom_range(zoom_range)
        self.channel_shift_range, self.fill_mode, self.cval = channel_shift_range, fill_mode, cval
        self.horizontal_flip, self.vertical_flip = horizontal_flip, vertical_flip
        self.rescale, self.preprocessing_function = rescale, preprocessing_function
        self.dtype, self.interpolation_order = dtype or backend.floatx(), interpolation_order
        self.data_format = _data_format(data_format)
        first = self.data_format == "channels_first"
        self.channel_axis, self.row_axis, self.col_axis = (1, 2, 3) if first else (3, 1, 2)
        if validation_split and not 0 < validation_split < 1:
            raise ValueError(
                f"`validation_split` must be strictly between 0 and 1. Received: {validation_split}"
            )
        self._validation_split = validation_split
        if brightness_range is not None and (
            not isinstance(brightness_range, (tuple, list)) or len(brightness_range) != 2
        ):
            raise ValueError(
                f"`brightness_range should be tuple or list of two floats. Received: "
                f"{brightness_range}"
            )
        self.brightness_range = brightness_range
        self.mean = self.std = self.zca_whitening_matrix = None

    def flow(
        self, x, y=None, batch_size=32, shuffle=True, sample_weight=None, seed=None,
        subset=None,
    ) -> NumpyArrayIterator:  # fmt: skip
        """A Sequence of ``(images, y[, sample_weight])`` batches over arrays."""
        return NumpyArrayIterator(
            x, y, self, batch_size=batch_size, shuffle=shuffle, sample_weight=sample_weight,
            seed=seed, data_format=self.data_format, subset=subset, dtype=self.dtype,
        )  # fmt: skip

    def flow_from_directory(
        self, directory, target_size=(256, 256), color_mode="rgb", classes=None,
        class_mode="categorical", batch_size=32, shuffle=True, seed=None, follow_links=False,
        subset=None, interpolation="nearest",
    ) -> DirectoryIterator:  # fmt: skip
        """A Sequence of batches of the image files under ``directory/<class>/``."""
        return DirectoryIterator(
            directory, self, target_size=target_size, color_mode=color_mode, classes=classes,
            class_mode=class_mode, batch_size=batch_size, shuffle=shuffle, seed=seed,
            data_format=self.data_format, follow_links=follow_links, subset=subset,
            interpolation=interpolation, dtype=self.dtype,
        )  # fmt: skip

    def standardize(self, x):
        """``x`` (one image or a batch) rescaled and normalized, in place where TF does."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        for wanted, stat in ((self.featurewise_center, self.mean),
                             (self.featurewise_std_normalization, self.std),
                             (self.zca_whitening, self.zca_whitening_matrix)):  # fmt: skip
            if wanted and stat is None:
                raise ValueError(
                    "This ImageDataGenerator specifies feature-wise statistics, but it hasn't "
                    "been fit on any training data. Fit it first by calling `.fit(numpy_data)`."
                )
        if self.featurewise_center:
            x -= self.mean
        if self.featurewise_std_normalization:
            x /= self.std + 1e-6
        if self.zca_whitening:
            flat = x.reshape(-1, np.prod(x.shape[-3:]))
            x = np.reshape(flat @ self.zca_whitening_matrix, x.shape)
        return x

    def get_random_transform(self, img_shape, seed=None) -> dict:
        """The transform parameters for one image, drawn from ``np.random`` in TF's order."""
        if seed is not None:
            np.random.seed(seed)
        theta = (
            np.random.uniform(-self.rotation_range, self.rotation_range)
            if self.rotation_range
            else 0
        )
        tx = (
            _shift(self.height_shift_range, img_shape[self.row_axis - 1])
            if self.height_shift_range
            else 0
        )
        ty = (
            _shift(self.width_shift_range, img_shape[self.col_axis - 1])
            if self.width_shift_range
            else 0
        )
        shear = np.random.uniform(-self.shear_range, self.shear_range) if self.shear_range else 0
        if self.zoom_range[0] == 1 and self.zoom_range[1] == 1:
            zx, zy = 1, 1
        else:
            zx, zy = np.random.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        flip_h = (np.random.random() < 0.5) * self.horizontal_flip
        flip_v = (np.random.random() < 0.5) * self.vertical_flip
        shift = None
        if self.channel_shift_range != 0:
            r = self.channel_shift_range
            shift = np.random.uniform(-r, r)
        brightness = None
        if self.brightness_range is not None:
            brightness = np.random.uniform(self.brightness_range[0], self.brightness_range[1])
        return {
            "theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy,
            "flip_horizontal": flip_h, "flip_vertical": flip_v,
            "channel_shift_intensity": shift, "brightness": brightness,
        }  # fmt: skip

    def apply_transform(self, x, transform_parameters: dict):
        """One image (rank 3) transformed by the parameters of :meth:`get_random_transform`."""
        p = transform_parameters
        rows, cols, chans = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        x = apply_affine_transform(
            x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0), p.get("shear", 0),
            p.get("zx", 1), p.get("zy", 1), row_axis=rows, col_axis=cols, channel_axis=chans,
            fill_mode=self.fill_mode, cval=self.cval, order=self.interpolation_order,
        )  # fmt: skip
        if p.get("channel_shift_intensity") is not None:
            x = _channel_shift(x, p["channel_shift_intensity"], chans)
        if p.get("flip_horizontal", False):
            x = np.flip(x, cols)
        if p.get("flip_vertical", False):
            x = np.flip(x, rows)
        if p.get("brightness") is not None:
            x = _brightness(x, p["brightness"])
        return x

    def random_transform(self, x, seed=None):
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x, augment=False, rounds=1, seed=None) -> None:
        """Feature-wise mean/std (per channel) and ZCA matrix of the rank-4 sample ``x``
        (rescaled, and augmented ``rounds`` times when ``augment``)."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(
                f"Input to `.fit()` should have rank 4. Got array with shape: {x.shape}"
            )
        if seed is not None:
            np.random.seed(seed)
        x = np.copy(x)
        if self.rescale:
            x *= self.rescale
        if augment:
            x = np.concatenate([np.stack([self.random_transform(im) for im in x])
                                for _ in range(rounds)]).astype(self.dtype)  # fmt: skip
        shape = [1, 1, 1]
        shape[self.channel_axis - 1] = x.shape[self.channel_axis]
        axes = (0, self.row_axis, self.col_axis)
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=axes), shape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=axes), shape)
            x /= self.std + 1e-6
        if self.zca_whitening:
            flat = np.reshape(x, (len(x), -1))
            u, s, _ = np.linalg.svd(flat.T, full_matrices=False)
            self.zca_whitening_matrix = (u * (np.sqrt(len(x)) / (s + self.zca_epsilon))).dot(u.T)


def _channel_shift(x, intensity, channel_axis):
    x = np.rollaxis(x, channel_axis, 0)
    lo, hi = np.min(x), np.max(x)
    x = np.stack([np.clip(ch + intensity, lo, hi) for ch in x], axis=0)
    return np.rollaxis(x, 0, channel_axis + 1)


def _brightness(x, brightness):
    """Brightness through PIL's ImageEnhance, as TF does: values outside 0..255 are
    stretched to it and back."""
    _require_pil("brightness_range")
    lo, hi = np.min(x), np.max(x)
    stretch = lo < 0 or hi > 255
    img = ImageEnhance.Brightness(array_to_img(x, scale=stretch)).enhance(brightness)
    x = img_to_array(img)
    return x / 255 * (hi - lo) + lo if stretch else x
