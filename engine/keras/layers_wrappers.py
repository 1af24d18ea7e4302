"""Keras' layer wrappers: ``TimeDistributed`` (a layer applied to every time step) and
``Bidirectional`` (a recurrent layer run forwards and backwards, outputs merged).

``Bidirectional`` copies the layer it is given twice from its config, as Keras does, as
``forward_<name>`` and ``backward_<name>`` (the backward one with ``go_backwards``
flipped), so the variables are ``bidirectional/forward_lstm/kernel:0`` and
``bidirectional/backward_lstm/kernel:0``, the forward layer's weights first.
"""

from __future__ import annotations

from engine.framework.constant_op import constant
from engine.keras.base_layer import Layer, _accepts
from engine.ops import array as array_ops
from engine.ops import array_transform
from engine.tensor_shape import TensorShape

__all__ = ["Bidirectional", "TimeDistributed", "Wrapper"]

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


class Wrapper(Layer):
    """A layer around another ``layer``."""

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(
                f"Please initialize `{type(self).__name__}` layer with a "
                f"`tf.keras.layers.Layer` instance. Received: {layer}"
            )
        super().__init__(**kwargs)
        self.layer = layer

    def get_config(self) -> dict:
        return {**super().get_config(), "layer": self.layer}


class TimeDistributed(Wrapper):
    """Applies ``layer`` to every time step: (batch, time, ...) is reshaped to
    (batch * time, ...) through the layer and back. The layer's weights are created in this
    layer's scope (``time_distributed/kernel:0``)."""

    def __init__(self, layer, **kwargs):
        super().__init__(layer, **kwargs)
        self.supports_masking = True

    def build(self, input_shape):
        shape = TensorShape(input_shape)
        if shape.rank is None or shape.rank < 3:
            raise ValueError(
                "`TimeDistributed` Layer should be passed an `input_shape ` with at least 3 "
                f"dimensions, received: {shape}"
            )
        if not self.layer.built:
            self.layer.build(TensorShape([shape[0].value]).concatenate(shape[2:]))
            self.layer.built = True
            if self.layer._initial_weights is not None:  # the inner layer's `weights=`
                self.layer.set_weights(self.layer._initial_weights)
                self.layer._initial_weights = None
        self.built = True

    def call(self, inputs, training=None, mask=None):  # noqa: ARG002 - the time mask passes
        dynamic = array_ops.shape(inputs)
        x = array_ops.reshape(inputs, array_transform.concat([constant([-1]), dynamic[2:]], 0))
        kwargs = {"training": training} if _accepts(self.layer.call, "training") else {}
        y = self.layer.call(x, **kwargs)
        target = array_transform.concat([dynamic[:2], array_ops.shape(y)[1:]], 0)
        out = array_ops.reshape(y, target)
        out.set_shape(TensorShape(inputs.shape[:2]).concatenate(y.shape[1:]))
        return out


def _copy_layer(layer, go_backwards=False):
    config = layer.get_config()
    if go_backwards:
        config["go_backwards"] = not config["go_backwards"]
    return type(layer).from_config(config)


def _merge(y, y_rev, mode):
    if mode == "concat":
        return array_transform.concat([y, y_rev], -1)
    if mode == "sum":
        return y + y_rev
    if mode == "ave":
        return (y + y_rev) / 2
    if mode == "mul":
        return y * y_rev
    return [y, y_rev]


class Bidirectional(Wrapper):
    """Runs a recurrent ``layer`` forwards and a copy backwards (or ``backward_layer``) and
    merges their outputs by ``merge_mode``: 'concat' (default), 'sum', 'mul', 'ave', or None
    for the list of both. With ``return_state`` the states of both follow the output."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError(
                f"`backward_layer` need to be a `tf.keras.layers.Layer` instance. You passed: "
                f"{backward_layer}"
            )
        if merge_mode not in _MERGE_MODES:
            raise ValueError(
                f"Invalid merge mode. Received: {merge_mode}. Merge mode should be one of "
                '{"sum", "mul", "ave", "concat", None}'
            )
        super().__init__(layer, **kwargs)
        self.__dict__["_layers"].remove(layer)  # only the two copies are tracked
        self.forward_layer = _copy_layer(layer)
        self._custom_backward = backward_layer is not None
        if backward_layer is None:
            backward_layer = _copy_layer(layer, go_backwards=True)
        self.backward_layer = backward_layer
        self.forward_layer._name = "forward_" + self.forward_layer.name
        self.backward_layer._name = "backward_" + self.backward_layer.name
        self._check_pair()
        for rnn in (self.forward_layer, self.backward_layer):
            if getattr(rnn, "zero_output_for_mask", None) is not None:
                rnn.zero_output_for_mask = rnn.return_sequences
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True
        if weights:
            half = len(weights) // 2
            self.forward_layer._initial_weights = weights[:half]
            self.backward_layer._initial_weights = weights[half:]

    def _check_pair(self) -> None:
        fw, bw = self.forward_layer, self.backward_layer
        if fw.go_backwards == bw.go_backwards:
            raise ValueError(
                "Forward layer and backward layer should have different `go_backwards` value."
                f"forward_layer.go_backwards = {fw.go_backwards},backward_layer.go_backwards = "
                f"{bw.go_backwards}"
            )
        for attr in ("stateful", "return_sequences", "return_state"):
            a, b = getattr(fw, attr), getattr(bw, attr)
            if a != b:
                raise ValueError(
                    "Forward layer and backward layer are expected to have the same value for "
                    f'attribute "{attr}", got "{a}" for forward layer and "{b}" for backward '
                    "layer"
                )

    def call(self, inputs, training=None, mask=None, initial_state=None):
        kwargs = {}
        if training is not None:
            kwargs["training"] = training
        if mask is not None:
            kwargs["mask"] = mask[0] if isinstance(mask, list) else mask
        fw_state = bw_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fw_state, bw_state = list(initial_state[:half]), list(initial_state[half:])
        y = self.forward_layer(inputs, initial_state=fw_state, **kwargs)
        y_rev = self.backward_layer(inputs, initial_state=bw_state, **kwargs)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            time_axis = 0 if getattr(self.forward_layer, "time_major", False) else 1
            y_rev = array_transform.reverse(y_rev, [time_axis])
        output = _merge(y, y_rev, self.merge_mode)
        if not self.return_state:
            return output
        return output + states if self.merge_mode is None else [output, *states]

    def compute_mask(self, inputs, mask=None):  # noqa: ARG002 - Keras' signature
        if isinstance(mask, list):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.merge_mode is None:
            output_mask = [output_mask, output_mask]
        else:
            output_mask = [output_mask]
        if self.return_state:
            n = len(self.forward_layer.states)
            return output_mask + [None] * (2 * n)
        return output_mask if self.merge_mode is None else output_mask[0]

    def get_config(self) -> dict:
        config = {**super().get_config(), "merge_mode": self.merge_mode}
        config.pop("backward_layer", None)
        if self._custom_backward:  # as it was given: without the "backward_" prefix
            backward = self.backward_layer.get_config()
            backward["name"] = backward["name"].removeprefix("backward_")
            config["backward_layer"] = {
                "class_name": type(self.backward_layer).__name__,
                "config": backward,
            }
        return config
