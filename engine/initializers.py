"""``tf.initializers``: TF 1.15's namespace of initializer classes and initializer ops.

The classes are ``engine.init_ops``'s (``identity``, ``orthogonal`` and
``uniform_unit_scaling`` come from ``engine.init_ops_more``, the thin wrappers added for it);
``global_variables``, ``local_variables``, ``variables`` and ``tables_initializer`` are the
ops that run variable and table initializers.
"""

from __future__ import annotations

from engine import init_ops, init_ops_more
from engine.init_ops import he_normal, he_uniform, lecun_normal, lecun_uniform
from engine.ops.lookup import tables_initializer
from engine.variables import global_variables_initializer as global_variables
from engine.variables import local_variables_initializer as local_variables
from engine.variables import variables_initializer as variables

constant = init_ops.Constant
glorot_normal = init_ops.GlorotNormal
glorot_uniform = init_ops.GlorotUniform
ones = init_ops.Ones
random_normal = init_ops.RandomNormal
random_uniform = init_ops.RandomUniform
truncated_normal = init_ops.TruncatedNormal
variance_scaling = init_ops.VarianceScaling
zeros = init_ops.Zeros
identity = init_ops_more.Identity
orthogonal = init_ops_more.Orthogonal
uniform_unit_scaling = init_ops_more.UniformUnitScaling

__all__ = [
    "constant",
    "global_variables",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "identity",
    "lecun_normal",
    "lecun_uniform",
    "local_variables",
    "ones",
    "orthogonal",
    "random_normal",
    "random_uniform",
    "tables_initializer",
    "truncated_normal",
    "uniform_unit_scaling",
    "variables",
    "variance_scaling",
    "zeros",
]
