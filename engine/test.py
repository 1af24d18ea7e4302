"""The ``engine.test`` namespace (TF1's ``tf.test``): gradient checking, ``TestCase`` and the
GPU/build queries."""

from engine.gradient_checker import compute_gradient, compute_gradient_error  # noqa: F401
from engine.test_case import (  # noqa: F401
    TestCase,
    get_temp_dir,
    gpu_device_name,
    is_built_with_cuda,
    is_built_with_gpu_support,
    is_built_with_rocm,
    is_built_with_xla,
    is_cpu_target_available,
    is_gpu_available,
    main,
)
