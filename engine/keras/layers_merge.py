"""Keras' merge layers in TF1 graph mode: ``Add``, ``Subtract``, ``Multiply``, ``Average``,
``Maximum``, ``Minimum``, ``Concatenate`` and ``Dot``, and their functional forms
(``add([a, b])`` is ``Add()([a, b])``).

Elementwise merges take inputs of the same shape or shapes that broadcast after the batch
axis; inputs of lower rank get size-1 axes after the batch axis first, as Keras does.

>>> y = Concatenate(axis=-1)([a, b])
"""

from __future__ import annotations

from engine.keras.base_layer import Layer
from engine.ops import array as array_ops
from engine.ops import array_transform, linalg, nn_impl, reduction
from engine.ops import math as math_ops
from engine.tensor_shape import TensorShape

__all__ = [
    "Add",
    "Average",
    "Concatenate",
    "Dot",
    "Maximum",
    "Minimum",
    "Multiply",
    "Subtract",
    "add",
    "average",
    "concatenate",
    "dot",
    "maximum",
    "minimum",
    "multiply",
    "subtract",
]


def _as_tuple(shape):
    shape = TensorShape(shape)
    return None if shape.rank is None else tuple(shape.as_list())


def _shape_list(input_shape, what: str):
    """The shapes of a merge layer's inputs as tuples; a single shape is an error."""
    if isinstance(input_shape, TensorShape) or not isinstance(input_shape, (list, tuple)):
        raise ValueError(
            f"{what} should be called on a list of inputs. Received: "
            f"input_shape={input_shape} (not a list of shapes)"
        )
    return [_as_tuple(s) for s in input_shape]


def _elementwise_shape(shape1, shape2):
    """The broadcast shape of two per-sample shapes, as Keras' merge layers check it."""
    if shape1 is None or shape2 is None:
        return None
    if len(shape1) < len(shape2):
        return _elementwise_shape(shape2, shape1)
    if not shape2:
        return shape1
    out = list(shape1[: -len(shape2)])
    for i, j in zip(shape1[-len(shape2) :], shape2):
        if i is None or j is None:
            out.append(None)
        elif i == 1 or j == 1:
            out.append(j if i == 1 else i)
        elif i != j:
            raise ValueError(
                f"Inputs have incompatible shapes. Received shapes {shape1} and {shape2}"
            )
        else:
            out.append(i)
    return tuple(out)


class _Merge(Layer):
    """An elementwise merge of a list of tensors."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self._reshape_required = False

    def _merge_function(self, inputs):
        raise NotImplementedError

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (list, tuple)):
            for i, x in enumerate(inputs):
                if isinstance(x, (list, tuple)):
                    # Not packed into one tensor: a layer that returned a list (a Lambda
                    # around K.gradients) gives its tensor as ``out[0]``.
                    raise TypeError(
                        f"A merge layer should be called on a list of tensors; input {i} is "
                        f"a {type(x).__name__} of {len(x)} (take the tensor out of it)"
                    )
        return super().__call__(inputs, *args, **kwargs)

    def build(self, input_shape):
        shapes = _shape_list(input_shape, "A merge layer")
        if len(shapes) < 1:
            raise ValueError(
                "A merge layer should be called on a list of at least 1 input. "
                f"Got {len(shapes)} inputs. Full input_shape received: {shapes}"
            )
        batch_sizes = {s[0] for s in shapes if s} - {None}
        if len(batch_sizes) > 1:
            raise ValueError(
                f"Cannot merge tensors with different batch sizes. Got tensors with shapes {shapes}"
            )
        self.compute_output_shape(input_shape)
        self._reshape_required = None in shapes or len({len(s) for s in shapes}) != 1
        self.built = True

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(
                "A merge layer should be called on a list of inputs. "
                f"Received: inputs={inputs} (not a list of tensors)"
            )
        ranks = [x.shape.rank for x in inputs]
        if self._reshape_required and None not in ranks:
            # Lower-rank inputs get size-1 axes after the batch axis, to broadcast.
            expanded = []
            for x, rank in zip(inputs, ranks):
                for _ in range(max(ranks) - rank):
                    x = array_ops.expand_dims(x, 1)
                expanded.append(x)
            inputs = expanded
        return self._merge_function(list(inputs))

    def compute_output_shape(self, input_shape):
        shapes = _shape_list(input_shape, "A merge layer")
        out = None if shapes[0] is None else shapes[0][1:]
        for s in shapes[1:]:
            out = _elementwise_shape(out, None if s is None else s[1:])
        if out is None:
            return TensorShape(None)
        batch_sizes = {s[0] for s in shapes if s is not None} - {None}
        batch = next(iter(batch_sizes)) if len(batch_sizes) == 1 else None
        return TensorShape((batch, *out))

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)):
            raise ValueError(f"`mask` should be a list. Received: mask={mask}")
        if len(mask) != len(inputs):
            raise ValueError(
                "The lists `inputs` and `mask` should have the same length. Received: "
                f"inputs={inputs} of length {len(inputs)}, and mask={mask} of length {len(mask)}"
            )
        masks = [array_ops.expand_dims(m, 0) for m in mask if m is not None]
        if not masks:
            return None
        return reduction.reduce_all(array_transform.concat(masks, 0), axis=0)


class Add(_Merge):
    """The sum of its inputs."""

    def _merge_function(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    def build(self, input_shape):
        super().build(input_shape)
        if len(input_shape) != 2:
            raise ValueError(
                "A `Subtract` layer should be called on exactly 2 inputs. "
                f"Received: input_shape={_shape_list(input_shape, 'A `Subtract` layer')}"
            )

    def _merge_function(self, inputs):
        if len(inputs) != 2:
            raise ValueError(
                "A `Subtract` layer should be called on exactly 2 inputs. "
                f"Received: inputs={inputs}"
            )
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    """The elementwise product of its inputs."""

    def _merge_function(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out * x
        return out


class Average(_Merge):
    """The elementwise mean of its inputs."""

    def _merge_function(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out / len(inputs)


class Maximum(_Merge):
    """The elementwise maximum of its inputs."""

    def _merge_function(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = math_ops.maximum(out, x)
        return out


class Minimum(_Merge):
    """The elementwise minimum of its inputs."""

    def _merge_function(self, inputs):
        out = inputs[0]
        for x in inputs[1:]:
            out = math_ops.minimum(out, x)
        return out


class Concatenate(_Merge):
    """Its inputs joined along ``axis``; every other axis must match."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def build(self, input_shape):
        if isinstance(input_shape, TensorShape) or not isinstance(input_shape, (list, tuple)):
            raise ValueError(
                "A `Concatenate` layer should be called on a list of at least 1 input. "
                f"Received: input_shape={input_shape}"
            )
        shapes = [_as_tuple(s) for s in input_shape]
        known = [list(s) for s in shapes if s is not None]
        if known:
            err = (
                "A `Concatenate` layer requires inputs with matching shapes except for the "
                f"concatenation axis. Received: input_shape={shapes}"
            )
            if len({len(s) for s in known}) != 1:
                raise ValueError(err)
            for s in known:
                del s[self.axis]
            for axis in range(len(known[0])):
                if len({s[axis] for s in known} - {None}) > 1:
                    raise ValueError(err)
        self.built = True

    def _merge_function(self, inputs):
        return array_transform.concat(inputs, self.axis)

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(
                "A `Concatenate` layer should be called on a list of inputs. "
                f"Received: input_shape={inputs.shape}"
            )
        return self._merge_function(list(inputs))

    def compute_output_shape(self, input_shape):
        shapes = [_as_tuple(s) for s in input_shape]
        if any(s is None for s in shapes):
            return TensorShape(None)
        out = list(shapes[0])
        for s in shapes[1:]:
            if out[self.axis] is None or s[self.axis] is None:
                out[self.axis] = None
                break
            out[self.axis] += s[self.axis]
        return TensorShape(out)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError(f"`mask` should be a list as long as `inputs`. Received: mask={mask}")
        if all(m is None for m in mask):
            return None
        masks = []
        for x, m in zip(inputs, mask):
            if m is None:
                masks.append(math_ops.cast(array_ops.ones_like(x), "bool"))
            elif (
                m.shape.rank is not None
                and x.shape.rank is not None
                and m.shape.rank < x.shape.rank
            ):
                masks.append(array_ops.expand_dims(m, -1))
            else:
                masks.append(m)
        return reduction.reduce_all(array_transform.concat(masks, self.axis), axis=-1)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


def _batch_dot(x, y, axes):
    """Keras' ``batch_dot``: per sample, ``x`` and ``y`` contracted over ``axes``; the
    result's axes are ``x``'s then ``y``'s remaining ones, at least ``(batch, 1)``."""
    letters = "bcdefghijklmnopqrstuvwxyz"
    x_rank, y_rank = x.shape.rank, y.shape.rank
    x_sub = ["a"] + [letters[i] for i in range(1, x_rank)]
    y_sub = ["a"] + [letters[x_rank + i] for i in range(1, y_rank)]
    y_sub[axes[1]] = x_sub[axes[0]]
    kept = [s for i, s in enumerate(x_sub) if i != axes[0]]
    kept += [s for i, s in enumerate(y_sub) if i not in (0, axes[1])]
    out = linalg.einsum(f"{''.join(x_sub)},{''.join(y_sub)}->{''.join(kept)}", x, y)
    return array_ops.expand_dims(out, 1) if len(kept) == 1 else out


class Dot(_Merge):
    """The per-sample dot product of two inputs over ``axes`` (an int or one per input);
    ``normalize=True`` L2-normalizes both first (cosine proximity)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError(
                    f"Invalid type for argument `axes`: it should be a list or an int. "
                    f"Received: axes={axes}"
                )
            if len(axes) != 2:
                raise ValueError(
                    "Invalid format for argument `axes`: it should contain two elements. "
                    f"Received: axes={axes}"
                )
            if not isinstance(axes[0], int) or not isinstance(axes[1], int):
                raise ValueError(
                    "Invalid format for argument `axes`: list elements should be integers. "
                    f"Received: axes={axes}"
                )
        self.axes = axes
        self.normalize = normalize

    def _axes(self, rank1: int, rank2: int) -> list[int]:
        axes = [self.axes] * 2 if isinstance(self.axes, int) else list(self.axes)
        return [a % r if a < 0 else a for a, r in zip(axes, (rank1, rank2))]

    def build(self, input_shape):
        if isinstance(input_shape, TensorShape) or len(input_shape) != 2:
            raise ValueError(
                f"A `Dot` layer should be called on a list of 2 inputs. Received: "
                f"input_shape={input_shape}"
            )
        shape1, shape2 = (_as_tuple(s) for s in input_shape)
        if shape1 is not None and shape2 is not None:
            a1, a2 = self._axes(len(shape1), len(shape2))
            if shape1[a1] != shape2[a2]:
                raise ValueError(
                    f"Incompatible input shapes: axis values {shape1[a1]} (at axis {a1}) != "
                    f"{shape2[a2]} (at axis {a2}). Full input shapes: {shape1}, {shape2}"
                )
        self.built = True

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(
                f"A `Dot` layer should be called on exactly 2 inputs. Received: inputs={inputs}"
            )
        x1, x2 = inputs
        axes = self._axes(x1.shape.rank, x2.shape.rank)
        if 0 in axes:
            raise ValueError(
                "Cannot perform batch_dot over axis 0. If your inputs are not batched, add a "
                "dummy batch dimension to your inputs using K.expand_dims(x, 0)"
            )
        if self.normalize:
            x1 = nn_impl.l2_normalize(x1, axis=axes[0])
            x2 = nn_impl.l2_normalize(x2, axis=axes[1])
        return _batch_dot(x1, x2, axes)

    def compute_output_shape(self, input_shape):
        shape1, shape2 = (list(_as_tuple(s)) for s in input_shape)
        a1, a2 = self._axes(len(shape1), len(shape2))
        shape1.pop(a1)
        shape2.pop(a2)
        shape2.pop(0)
        out = shape1 + shape2
        return TensorShape(out + [1] if len(out) == 1 else out)

    def compute_mask(self, inputs, mask=None):  # noqa: ARG002 - Keras' signature
        return None

    def get_config(self) -> dict:
        return {**super().get_config(), "axes": self.axes, "normalize": self.normalize}


def add(inputs, **kwargs):
    """``Add(**kwargs)(inputs)``."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """``Subtract(**kwargs)(inputs)``."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """``Multiply(**kwargs)(inputs)``."""
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """``Average(**kwargs)(inputs)``."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """``Maximum(**kwargs)(inputs)``."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """``Minimum(**kwargs)(inputs)``."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis=axis, **kwargs)(inputs)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs, axes, normalize=False, **kwargs):
    """``Dot(axes, normalize, **kwargs)(inputs)``."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
