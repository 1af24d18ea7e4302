"""Namespaces of TF's API (``tf.contrib``, ``tf.math``, ...): modules whose missing
attributes name what the engine lacks."""

from __future__ import annotations

import types

__all__ = ["Namespace", "namespace"]


class Namespace(types.ModuleType):
    """A module whose missing attributes name what the engine lacks."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{self.__name__}.{name} is not available in flowserve's engine (it covers "
            f"{', '.join(sorted(k for k in self.__dict__ if not k.startswith('_')))})"
        )


def namespace(name: str, **members) -> Namespace:
    """A ``Namespace`` called ``name`` holding ``members``."""
    mod = Namespace(name)
    mod.__dict__.update(members)
    return mod
