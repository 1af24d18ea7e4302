"""The TF1 initializers ``engine.init_ops`` lacks, as thin compositions of engine ops:
``Identity`` (``tf.initializers.identity``), ``Orthogonal`` (``tf.orthogonal_initializer``)
and ``UniformUnitScaling`` (``tf.uniform_unit_scaling_initializer``), with TF 1.15's
arguments and formulas.
"""

from __future__ import annotations

import math

from engine import dtypes
from engine.init_ops import Initializer, _shape_list
from engine.ops import math as math_ops
from engine.ops import random as random_ops
from engine.ops.array import reshape
from engine.ops.array_impl import eye
from engine.ops.decompositions import qr
from engine.ops.linalg_ops import matrix_diag_part, matrix_transpose

__all__ = [
    "Identity",
    "Orthogonal",
    "UniformUnitScaling",
    "identity_initializer",
    "orthogonal_initializer",
    "uniform_unit_scaling_initializer",
]


_NOT_2D = (
    "The tensor to initialize, specified by argument `shape` must be at least "
    "two-dimensional. Received shape={}"
)


def _full_shape(shape, partition_info):
    if partition_info is not None:
        raise NotImplementedError("partitioned variables are not supported by this initializer")
    return _shape_list(shape)


class Identity(Initializer):
    """``gain`` times the identity matrix; only for 2-D shapes."""

    def __init__(self, gain=1.0, dtype=dtypes.float32):
        super().__init__(dtype)
        self.gain = gain

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = _full_shape(shape, partition_info)
        if len(dims) != 2:  # TF's wording, although 3-D shapes are refused too
            raise ValueError(_NOT_2D.format(dims))
        return self.gain * eye(dims[0], dims[1], dtype=self._dtype(dtype))

    def get_config(self):
        return {"gain": self.gain, "dtype": self.dtype.name}


class Orthogonal(Initializer):
    """A random orthogonal matrix (the Q of a normal matrix's QR, signs fixed by R's
    diagonal) times ``gain``, reshaped: rows or columns of the flattened ``[prod(shape[:-1]),
    shape[-1]]`` matrix are orthonormal, whichever are fewer."""

    def __init__(self, gain=1.0, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = _full_shape(shape, partition_info)
        if len(dims) < 2:
            raise ValueError(_NOT_2D.format(dims))
        dtype = self._dtype(dtype)
        num_rows, num_cols = math.prod(dims[:-1]), dims[-1]
        flat = (num_cols, num_rows) if num_rows < num_cols else (num_rows, num_cols)
        a = random_ops.random_normal(flat, dtype=dtype, seed=self.seed)
        q, r = qr(a, full_matrices=False)
        q = q * math_ops.sign(matrix_diag_part(r))
        if num_rows < num_cols:
            q = matrix_transpose(q)
        return self.gain * reshape(q, dims)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class UniformUnitScaling(Initializer):
    """Uniform in ``[-m, m]`` with ``m = factor * sqrt(3 / prod(shape[:-1]))``."""

    def __init__(self, factor=1.0, seed=None, dtype=dtypes.float32):
        super().__init__(dtype)
        self.factor, self.seed = factor, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = _full_shape(shape, partition_info)
        input_size = max(float(math.prod(dims[:-1])), 1.0)
        max_val = math.sqrt(3 / input_size) * self.factor
        return random_ops.random_uniform(dims, -max_val, max_val, self._dtype(dtype), self.seed)

    def get_config(self):
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


identity_initializer = Identity
orthogonal_initializer = Orthogonal
uniform_unit_scaling_initializer = UniformUnitScaling
