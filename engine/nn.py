"""The ``engine.nn`` namespace (TF1's ``tf.nn``)."""

from engine.ops.array import stop_gradient  # noqa: F401
from engine.ops.math import sigmoid, tanh  # noqa: F401
from engine.ops.nn import *  # noqa: F401,F403
from engine.ops.nn_conv import *  # noqa: F401,F403
