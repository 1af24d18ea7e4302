"""``tf.keras.Input`` and ``InputLayer``: the placeholders a Keras model is fed through."""

from __future__ import annotations

from engine.framework import graph as ops
from engine.framework.constant_op import convert_to_tensor
from engine.keras import backend
from engine.keras.base_layer import _HISTORY, Layer, Node
from engine.ops import array as array_ops

__all__ = ["Input", "InputLayer"]


class InputLayer(Layer):
    """The layer of a model input: a placeholder (or the given ``input_tensor``)."""

    def __init__(
        self,
        input_shape=None,
        batch_size=None,
        dtype=None,
        input_tensor=None,
        sparse=False,
        name=None,
        batch_input_shape=None,
        **kwargs,
    ):
        if sparse:
            raise ValueError("InputLayer(sparse=True) is not supported: feed dense tensors")
        name = name or f"input_{backend.get_uid('input')}"
        if batch_input_shape is None and input_shape is not None:
            shape = (input_shape,) if isinstance(input_shape, int) else tuple(input_shape)
            batch_input_shape = (batch_size, *shape)
        super().__init__(name=name, dtype=dtype, **kwargs)
        if input_tensor is None:
            if batch_input_shape is None:
                raise ValueError("An Input needs a shape: give `shape` or `batch_shape`")
            with ops.name_scope(None):
                input_tensor = array_ops.placeholder(
                    dtype or backend.floatx(), shape=batch_input_shape, name=name
                )
        else:
            input_tensor = convert_to_tensor(input_tensor)
            batch_input_shape = backend.int_shape(input_tensor)
        self._batch_input_shape = batch_input_shape
        self._dtype = input_tensor.dtype.base_dtype.name
        self.built = True
        self.is_placeholder = input_tensor.op.type in ("Placeholder", "PlaceholderWithDefault")
        self._inbound_nodes.append(Node(self, [], [input_tensor], {}))
        _HISTORY[input_tensor] = (self, 0, 0)

    def get_config(self) -> dict:
        return {
            "batch_input_shape": self._batch_input_shape,
            "dtype": self.dtype,
            "sparse": False,
            "ragged": False,
            "name": self.name,
            "optional": False,
        }


def Input(
    shape=None,
    batch_size=None,
    name=None,
    dtype=None,
    sparse=False,
    tensor=None,  # noqa: N802 - Keras' name
    batch_shape=None,
    **kwargs,
):
    """A Keras tensor to build a functional model from: a placeholder of shape
    ``(batch_size, *shape)``.

    >>> x = Input(shape=(784,))        # a float32 placeholder of shape (?, 784)
    """
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {sorted(kwargs)}")
    if shape is None and batch_shape is None and tensor is None:
        raise ValueError(
            "Please provide to Input either a `shape` or a `tensor` argument. Note that "
            "`shape` does not include the batch dimension."
        )
    if batch_shape is None and shape is not None:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        batch_shape = (batch_size, *shape)
    layer = InputLayer(
        batch_input_shape=batch_shape, name=name, dtype=dtype, sparse=sparse, input_tensor=tensor
    )
    return layer._inbound_nodes[0].outputs[0]
