"""A model's weights in TF1 Keras' order (``Network.weights`` and friends).

A model lists its layers' weights layer by layer (``layer.weights`` of each, in the order
the layers were added), then its own; freezing a layer moves its weights between
``trainable_weights`` and ``non_trainable_weights`` but not within ``weights``, so
``get_weights``/``set_weights`` keep one order whatever is frozen. A frozen model
(``model.trainable = False``) reports every weight as non-trainable: the layers' trainable
ones first, then its own, then the non-trainable ones.
"""

from __future__ import annotations

__all__ = ["NetworkWeights"]


def _dedup(weights: list) -> list:
    seen, out = set(), []
    for w in weights:
        if id(w) not in seen:
            seen.add(id(w))
            out.append(w)
    return out


class NetworkWeights:
    """Mixed into ``Model`` before ``Layer``: weights gathered from ``self._layers``."""

    @property
    def trainable_weights(self) -> list:
        if not self.trainable:
            return []
        out = [w for layer in self._layers for w in layer.trainable_weights]
        return _dedup(out + list(self._trainable_weights))

    @property
    def non_trainable_weights(self) -> list:
        out = [w for layer in self._layers for w in layer.non_trainable_weights]
        out += list(self._non_trainable_weights)
        if not self.trainable:
            frozen = [w for layer in self._layers for w in layer.trainable_weights]
            out = frozen + list(self._trainable_weights) + out
        return _dedup(out)

    @property
    def weights(self) -> list:
        out = [w for layer in self._layers for w in layer.weights]
        return _dedup(out + list(self._trainable_weights) + list(self._non_trainable_weights))

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
