"""Op families. Importing this package registers every op type."""

from engine.ops import (  # noqa: F401 - imported for their registrations
    activations,
    array,
    array_transform,
    control_flow,
    grad_util,
    linalg,
    logging_ops,
    lookup,
    math,
    nn,
    random,
    reduction,
    script,
    slicing,
    state,
    tensor_array,
    training_ops,
)
