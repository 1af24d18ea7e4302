"""``tf.image`` geometry, composed from engine ops as TF 1.15's Python composes them: flips
(fixed and seeded random), ``rot90``, ``transpose``, the bounding-box crops and pads,
``resize_image_with_crop_or_pad``, ``central_crop`` and ``random_crop``.

Images are a single ``[height, width, channels]`` or a batch ``[batch, height, width,
channels]``; their rank must be known when the graph is built (TF also accepts an unknown
rank through ``cond`` on ``tf.rank``; here that raises a ValueError naming the requirement).
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.ops import array as array_ops
from engine.ops import array_transform, control_flow, logging_ops, random, reduction, slicing
from engine.ops import math as math_ops

__all__ = [
    "flip_left_right",
    "flip_up_down",
    "random_flip_left_right",
    "random_flip_up_down",
    "rot90",
    "transpose",
    "central_crop",
    "crop_to_bounding_box",
    "pad_to_bounding_box",
    "resize_image_with_crop_or_pad",
    "random_crop",
]


def image_rank(image: Tensor) -> int:
    """3 or 4, the known rank of ``image``; ValueError otherwise (TF's message)."""
    rank = image.shape.rank
    if rank is None:
        raise ValueError(
            f"'image' (shape {image.shape}) must have a known rank (3 or 4) when the graph is built"
        )
    if rank not in (3, 4):
        if rank < 3:
            raise ValueError(f"'image' (shape {image.shape}) must be at least three-dimensional.")
        raise ValueError(f"'image' (shape {image.shape}) must have either 3 or 4 dimensions.")
    dims = image.shape.as_list()[-3:]
    if any(d == 0 for d in dims):
        raise ValueError(f"inner 3 dims of 'image.shape' must be > 0: {image.shape}")
    return rank


def _flip(image, axis, scope_name):
    with name_scope(None, scope_name, [image]):
        image = convert_to_tensor(image, name="image")
        rank = image_rank(image)
        return array_transform.reverse(image, [axis + rank - 3])


def flip_left_right(image) -> Tensor:
    """Mirrors ``image`` along its width (``ReverseV2``)."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image) -> Tensor:
    """Mirrors ``image`` along its height (``ReverseV2``)."""
    return _flip(image, 0, "flip_up_down")


def _random_flip(image, axis, seed, scope_name):
    with name_scope(None, scope_name, [image]) as scope:
        image = convert_to_tensor(image, name="image")
        rank = image_rank(image)
        if rank == 3:
            uniform = random.random_uniform([], 0, 1.0, seed=seed)
            flipped = control_flow.cond(
                math_ops.less(uniform, 0.5),
                lambda: array_transform.reverse(image, [axis]),
                lambda: image,
                name=scope,
            )
            flipped.set_shape(image.shape)
            return flipped
        batch = slicing.strided_slice(array_ops.shape(image), [0], [1], shrink_axis_mask=1)
        uniform = random.random_uniform(array_transform.stack([batch]), 0, 1.0, seed=seed)
        flips = math_ops.round(array_ops.reshape(uniform, array_transform.stack([batch, 1, 1, 1])))
        flips = math_ops.cast(flips, image.dtype)
        mirrored = array_transform.reverse(image, [axis + 1])
        return math_ops.add(
            math_ops.multiply(flips, mirrored),
            math_ops.multiply(math_ops.subtract(1, flips), image),
        )


def random_flip_left_right(image, seed=None) -> Tensor:
    """Mirrors ``image`` (each image of a batch) left-right with probability 1/2."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None) -> Tensor:
    """Mirrors ``image`` (each image of a batch) up-down with probability 1/2."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def _rot90_static(image, k, rank):
    h, w = rank - 3, rank - 2
    perm = [1, 0, 2] if rank == 3 else [0, 2, 1, 3]
    if k == 1:
        return array_ops.transpose(array_transform.reverse(image, [w]), perm)
    if k == 2:
        return array_transform.reverse(image, [h, w])
    if k == 3:
        return array_transform.reverse(array_ops.transpose(image, perm), [w])
    return image


def rot90(image, k=1, name=None) -> Tensor:
    """Rotates ``image`` by ``k`` quarter turns counter-clockwise (``k`` modulo 4).

    ``k`` selects at run time among the four rotations (TF's ``case``), so the result's
    height and width are statically unknown, as in TF."""
    with name_scope(name, "rot90", [image, k]) as scope:
        image = convert_to_tensor(image, name="image")
        rank = image_rank(image)
        k_tensor = convert_to_tensor(k, dtype=dtypes.int32, name="k")
        k_mod = math_ops.mod(k_tensor, 4)
        result = control_flow.cond(
            math_ops.less(k_mod, 2),
            lambda: control_flow.cond(
                math_ops.equal(k_mod, 0),
                lambda: _rot90_static(image, 0, rank),
                lambda: _rot90_static(image, 1, rank),
            ),
            lambda: control_flow.cond(
                math_ops.equal(k_mod, 2),
                lambda: _rot90_static(image, 2, rank),
                lambda: _rot90_static(image, 3, rank),
            ),
            name=scope,
        )
        dims = image.shape.as_list()
        result.set_shape([None, None, dims[2]] if rank == 3 else [dims[0], None, None, dims[3]])
        return result


def transpose(image, name=None) -> Tensor:
    """Swaps height and width of ``image`` (``Transpose``)."""
    with name_scope(name, "transpose", [image]):
        image = convert_to_tensor(image, name="image")
        perm = [1, 0, 2] if image_rank(image) == 3 else [0, 2, 1, 3]
        return array_ops.transpose(image, perm, name=name)


def _dims(image: Tensor) -> list:
    """The four NHWC sizes: ints where known, scalar tensors where not."""
    static = image.shape.as_list()
    if None not in static:
        return static
    dynamic = array_transform.unstack(array_ops.shape(image), 4)
    return [s if s is not None else d for s, d in zip(static, dynamic, strict=True)]


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _checks(conditions) -> list:
    """Python conditions raise now (TF's ``_assert``); tensor conditions become asserts."""
    ops = []
    for cond, msg in conditions:
        if _is_tensor(cond):
            ops.append(logging_ops.Assert(cond, [msg]))
        elif not cond:
            raise ValueError(msg)
    return ops


def _as_batch(image: Tensor):
    rank = image_rank(image)
    return (image, True) if rank == 4 else (array_ops.expand_dims(image, 0), False)


def _unbatch(image: Tensor, is_batch: bool) -> Tensor:
    return image if is_batch else array_ops.squeeze(image, axis=[0])


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width) -> Tensor:
    """The ``target_height x target_width`` window of ``image`` at the given offsets."""
    with name_scope(None, "crop_to_bounding_box", [image]):
        image, is_batch = _as_batch(convert_to_tensor(image, name="image"))
        batch, height, width, depth = _dims(image)
        checks = _checks(
            [
                (_ge(offset_width, 0), "offset_width must be >= 0."),
                (_ge(offset_height, 0), "offset_height must be >= 0."),
                (_gt(target_width, 0), "target_width must be > 0."),
                (_gt(target_height, 0), "target_height must be > 0."),
                (_ge(width, _add(target_width, offset_width)), "width must be >= target + offset."),
                (
                    _ge(height, _add(target_height, offset_height)),
                    "height must be >= target + offset.",
                ),
            ]
        )
        image = control_flow.with_dependencies(checks, image) if checks else image
        cropped = slicing.slice(
            image,
            array_transform.stack([0, offset_height, offset_width, 0]),
            array_transform.stack([-1, target_height, target_width, -1]),
        )
        cropped.set_shape(
            [None if _is_tensor(i) else i for i in (batch, target_height, target_width, depth)]
        )
        return _unbatch(cropped, is_batch)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width) -> Tensor:
    """``image`` zero-padded to ``target_height x target_width``, placed at the offsets."""
    with name_scope(None, "pad_to_bounding_box", [image]):
        image, is_batch = _as_batch(convert_to_tensor(image, name="image"))
        batch, height, width, depth = _dims(image)
        after_width = _sub(_sub(target_width, offset_width), width)
        after_height = _sub(_sub(target_height, offset_height), height)
        checks = _checks(
            [
                (_ge(offset_height, 0), "offset_height must be >= 0"),
                (_ge(offset_width, 0), "offset_width must be >= 0"),
                (_ge(after_width, 0), "width must be <= target - offset"),
                (_ge(after_height, 0), "height must be <= target - offset"),
            ]
        )
        image = control_flow.with_dependencies(checks, image) if checks else image
        flat = [0, 0, offset_height, after_height, offset_width, after_width, 0, 0]
        paddings = array_ops.reshape(array_transform.stack(flat), [4, 2])
        padded = array_transform.pad(image, paddings)
        padded.set_shape(
            [None if _is_tensor(i) else i for i in (batch, target_height, target_width, depth)]
        )
        return _unbatch(padded, is_batch)


def _binary(py, tf_op):
    def apply(x, y):
        if _is_tensor(x) or _is_tensor(y):
            return tf_op(x, y)
        return py(x, y)

    return apply


_add = _binary(lambda x, y: x + y, math_ops.add)
_sub = _binary(lambda x, y: x - y, math_ops.subtract)
_ge = _binary(lambda x, y: x >= y, math_ops.greater_equal)
_gt = _binary(lambda x, y: x > y, math_ops.greater)
_max = _binary(max, math_ops.maximum)
_min = _binary(min, math_ops.minimum)
_floordiv2 = _binary(lambda x, y: x // y, math_ops.floordiv)


def resize_image_with_crop_or_pad(image, target_height, target_width) -> Tensor:
    """``image`` centrally cropped and/or zero-padded to ``target_height x target_width``."""
    with name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image, is_batch = _as_batch(convert_to_tensor(image, name="image"))
        _checks(
            [
                (_gt(target_width, 0), "target_width must be > 0."),
                (_gt(target_height, 0), "target_height must be > 0."),
            ]
        )
        _, height, width, _ = _dims(image)
        width_diff = _sub(target_width, width)
        height_diff = _sub(target_height, height)
        crop_w = _max(_floordiv2(_sub(0, width_diff), 2), 0)
        pad_w = _max(_floordiv2(width_diff, 2), 0)
        crop_h = _max(_floordiv2(_sub(0, height_diff), 2), 0)
        pad_h = _max(_floordiv2(height_diff, 2), 0)
        cropped = crop_to_bounding_box(
            image, crop_h, crop_w, _min(target_height, height), _min(target_width, width)
        )
        resized = pad_to_bounding_box(cropped, pad_h, pad_w, target_height, target_width)
        return _unbatch(resized, is_batch)


def central_crop(image, central_fraction) -> Tensor:
    """The central ``central_fraction`` (in (0, 1]) of ``image``'s height and width."""
    with name_scope(None, "central_crop", [image]):
        image = convert_to_tensor(image, name="image")
        fraction = float(central_fraction)
        if fraction <= 0.0 or fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if fraction == 1.0:
            return image
        rank = image_rank(image)
        dims = image.shape.as_list()
        h, w = dims[rank - 3], dims[rank - 2]
        if h is None or w is None:
            shape = array_ops.shape(image)
            sizes = [h, w]
            for i, axis in enumerate((rank - 3, rank - 2)):
                if sizes[i] is None:
                    sizes[i] = slicing.strided_slice(shape, [axis], [axis + 1], shrink_axis_mask=1)
            h, w = sizes
        h_start = _start(h, fraction)
        w_start = _start(w, fraction)
        h_size = _sub(h, _mul2(h_start))
        w_size = _sub(w, _mul2(w_start))
        begin = [h_start, w_start, 0] if rank == 3 else [0, h_start, w_start, 0]
        size = [h_size, w_size, -1] if rank == 3 else [-1, h_size, w_size, -1]
        out = slicing.slice(image, array_transform.stack(begin), array_transform.stack(size))
        hw = [None if _is_tensor(v) else v for v in (h_size, w_size)]
        out.set_shape(hw + [dims[-1]] if rank == 3 else [dims[0], *hw, dims[-1]])
        return out


def _start(size, fraction):
    if _is_tensor(size):
        sized = math_ops.cast(size, dtypes.float64)
        # TF casts the Python fraction through float32 first (0.6 -> 0.6000000238...).
        frac = math_ops.cast(convert_to_tensor(fraction, dtype=dtypes.float32), dtypes.float64)
        kept = math_ops.subtract(sized, math_ops.multiply(sized, frac))
        return math_ops.cast(math_ops.divide(kept, 2.0), dtypes.int32)
    return int((float(size) - float(size) * fraction) / 2)


def _mul2(x):
    return math_ops.multiply(x, 2) if _is_tensor(x) else x * 2


def random_crop(value, size, seed=None, name=None) -> Tensor:
    """A ``size`` slice of ``value`` at a uniformly random offset (``tf.random_crop``)."""
    with name_scope(name, "random_crop", [value, size]) as scope:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = array_ops.shape(value)
        check = logging_ops.Assert(
            reduction.reduce_all(math_ops.greater_equal(shape, size)),
            ["Need value.shape >= size, got ", shape, size],
            summarize=1000,
        )
        shape = control_flow.with_dependencies([check], shape)
        limit = math_ops.add(math_ops.subtract(shape, size), 1)
        offset = math_ops.mod(
            random.random_uniform(
                array_ops.shape(shape), maxval=dtypes.int32.max, dtype=dtypes.int32, seed=seed
            ),
            limit,
        )
        return slicing.slice(value, offset, size, name=scope)
