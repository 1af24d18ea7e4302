"""The ``engine.test`` namespace (TF1's ``tf.test``): gradient checking."""

from engine.gradient_checker import compute_gradient, compute_gradient_error  # noqa: F401
