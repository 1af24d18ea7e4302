"""Op families. Importing this package registers every op type."""

from engine.ops import (  # noqa: F401 - imported for their registrations
    array,
    array_transform,
    control_flow,
    conv,
    grad_util,
    linalg,
    logging_ops,
    math,
    nn,
    nn_conv,
    random,
    reduction,
    script,
    slicing,
    state,
    tensor_array,
    training_ops,
)
