"""Every op declares whether it is differentiable, and every gradient is checked somewhere."""

import numpy as np

import engine as tf
from engine.framework import registry
from tests.engine import (
    test_array_grads,
    test_check_ops_more,
    test_conv3d,
    test_conv_ops,
    test_decompositions,
    test_detection_ops,
    test_image_more,
    test_linalg_ops,
    test_losses,
    test_lrn_and_random,
    test_math_elementwise,
    test_math_more,
    test_nn_grads,
    test_partition_ops,
    test_reduction_grads,
    test_segment_ops,
    test_set_ops,
    test_sparse_ops,
    test_sparse_segment_ops,
)

# Gradients checked by dedicated tests rather than table cases (file: test).
CHECKED_ELSEWHERE = {
    "If": "test_control_flow.py: test_gradients_through_cond_and_where",
    "While": "test_control_flow.py: test_gradient_of_power_computed_by_loop",
    "Identity": "exercised by every variable read in test_training.py",
    "SumToShape": "grad of broadcasting ops' gradients (second order) in test_array_grads",
    "PlaceholderWithDefault": "test_array_grads.py: test_non_differentiable_inputs_get_none",
    "SparseDenseCwiseAdd": "its gradient raises, as TF's: test_sparse_ops.py: "
    "test_sparse_dense_cwise_add_has_no_gradient_as_in_tensorflow",
}


def _has_gradient(op_type) -> bool:
    return registry.has_gradient(op_type) and registry.gradient(op_type) is not None


def test_every_op_is_differentiable_or_says_it_is_not():
    undecided = [t for t in registry.registered_types() if not registry.has_gradient(t)]
    assert not undecided, f"ops with neither a gradient nor differentiable=False: {undecided}"


def _forward_types(case):
    g = tf.Graph()
    with g.as_default():
        ins = [
            tf.constant(np.asarray(v, np.float64) if np.asarray(v).dtype.kind == "f" else v)
            for v in case.inputs
        ]
        case.build(*ins)
    return {op.type for op in g.get_operations()}


def test_every_gradient_has_a_finite_difference_check():
    covered = set()
    for mod, attr in (
        (test_math_elementwise, "GRAD_CASES"),
        (test_array_grads, "CASES"),
        (test_array_grads, "SECOND_ORDER"),
        (test_reduction_grads, "GRAD_CASES"),
        (test_nn_grads, "GRAD_CASES"),
        (test_losses, "GRAD_CASES"),
        (test_lrn_and_random, "GRAD_CASES"),
        (test_image_more, "GRAD_CASES"),
        (test_check_ops_more, "GRAD_CASES"),
        (test_conv_ops, "GRAD_CASES"),
        (test_conv3d, "GRAD_CASES"),
        (test_segment_ops, "GRAD_CASES"),
        (test_partition_ops, "GRAD_CASES"),
        (test_linalg_ops, "GRAD_CASES"),
        (test_decompositions, "GRAD_CASES"),
        (test_math_more, "GRAD_CASES"),
        (test_set_ops, "GRAD_CASES"),
        (test_sparse_ops, "GRAD_CASES"),
        (test_detection_ops, "GRAD_CASES"),
        (test_sparse_segment_ops, "GRAD_CASES"),
    ):
        for case in getattr(mod, attr):
            if case.grad_inputs:
                covered |= _forward_types(case)
    with_gradients = {t for t in registry.registered_types() if _has_gradient(t)}
    missing = with_gradients - covered - set(CHECKED_ELSEWHERE)
    assert not missing, f"gradients without a finite-difference case: {sorted(missing)}"
