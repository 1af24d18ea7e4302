"""How TensorFlow's op types and attrs map onto the engine's ops.

Most engine ops carry TF's own names and attr names, so a node maps one to one. This table
holds the exceptions:

- ``RENAMES``: TF op types served by an engine op of another name (resource-variable ops
  become the engine's variable ops: a ``VarHandleOp`` is a variable, ``ReadVariableOp`` reads
  it, ``AssignVariableOp`` assigns it).
- ``DERIVED_ATTRS``: type attrs TF records but the engine infers from the inputs.
- ``DEFAULT_ATTRS``: attrs the engine does not take, tolerated while they hold TF's default
  value (a graph relying on a non-default value is refused, never silently run differently).
- ``OUTPUT_ARGS``: the output args of ops with more than one, to resolve a function body's
  ``node:arg:index`` references to flat output numbers; a list-valued arg is
  ``(arg, attr)``, the attr holding its length (a number or a type list). A test checks
  this table against the op definitions TensorFlow 2.21 registers.
- ``SAVER_OPS``: ops of a graph's saver; loaders read checkpoints themselves, so the saver
  subgraph is not imported.
"""

from __future__ import annotations

__all__ = [
    "RENAMES",
    "DERIVED_ATTRS",
    "DEFAULT_ATTRS",
    "OP_DEFAULT_ATTRS",
    "OUTPUT_ARGS",
    "CALL_OPS",
    "SAVER_OPS",
    "DROPPED_ALWAYS",
    "TF_DEFAULTS",
]

RENAMES: dict[str, str] = {
    "Add": "AddV2",
    "BatchMatMul": "BatchMatMulV2",
    "BatchMatMulV3": "BatchMatMulV2",
    "Snapshot": "Identity",
    "VarHandleOp": "VariableV2",
    "ReadVariableOp": "Identity",
    "AssignVariableOp": "Assign",
    "AssignAddVariableOp": "AssignAdd",
    "AssignSubVariableOp": "AssignSub",
    "VarIsInitializedOp": "IsVariableInitialized",
    "ResourceGather": "GatherV2",
    "Mod": "TruncateMod",  # TF's Mod truncates (C's %, fmod), as TruncateMod
}

# Type attrs the engine re-infers from input dtypes (and input counts, for N).
DERIVED_ATTRS = frozenset(
    [
        "T",
        "Tidx",
        "T_threshold",
        "shape_type",
        "Tshape",
        "Tpaddings",
        "Tperm",
        "Index",
        "Tmultiples",
        "Taxis",
        "Tparams",
        "Tindices",
        "TI",
        "N",
        "SrcT",
        "Tdim",
        "Tlen",
        "Tcond",
        "Tin",
        "Ta",
        "Tb",
        "Tsplits",
        "Tkey",
        "Tval",
        "Tk",
        "Tsegmentids",
        "Tnumsegments",
        "Tshift",
        "Tblock_shape",
        "Tcrops",
        "Treal",
        "TInput",
        "Tindex",  # RaggedTensorToTensor's partition and shape index types
        "num_row_partition_tensors",
        "U",  # FusedBatchNormV2/V3: the dtype of scale, offset, mean and variance
    ]
)

# Attrs that only tune how TF runs an op; tolerated at these values on any op.
DEFAULT_ATTRS: dict[str, object] = {
    "use_cudnn_on_gpu": True,
    "explicit_paddings": (),
    "Truncate": False,
    "validate_indices": True,
    "allowed_devices": (),
    "use_locking": False,
    "validate_shape": True,
    "grad_a": False,
    "grad_b": False,
    "container": "",
    "shared_name": "",
    "debug_name": "",
    "Tout": None,  # BatchMatMulV3's output type: checked by dtype inference instead
    "incompatible_shape_error": True,  # Equal/NotEqual: incompatible shapes are an error
    "bad_indices_policy": "",  # scatter/gather ops: out-of-range indices are an error
}

# Per-op attrs tolerated at these values (or, for None, whatever their value).
OP_DEFAULT_ATTRS: dict[str, dict[str, object]] = {
    "TopKV2": {"index_type": "int32"},
    "Fill": {"index_type": None},
    "VariableV2": {"debug_name": None, "allowed_devices": None},
    "Identity": {"dtype": None},  # ReadVariableOp's dtype: the variable's own
    "Assign": {"dtype": None, "validate_shape": False},
    "AssignAdd": {"dtype": None},
    "AssignSub": {"dtype": None},
    "GatherV2": {"dtype": None},
    "PlaceholderWithDefault": {"dtype": None},  # the default value's dtype
    # TF1 TensorArrays: the engine's reads never clear an element
    "TensorArrayV3": {"clear_after_read": None},
}

OUTPUT_ARGS: dict[str, tuple] = {
    "TopKV2": ("values", "indices"),
    "Unique": ("y", "idx"),
    "UniqueWithCounts": ("y", "idx", "count"),
    "ListDiff": ("out", "idx"),
    "Switch": ("output_false", "output_true"),
    "StringSplit": ("indices", "values", "shape"),
    "DecodeWav": ("audio", "sample_rate"),
    "CTCLoss": ("loss", "gradient"),
    "CTCGreedyDecoder": ("decoded_indices", "decoded_values", "decoded_shape", "log_probability"),
    "FusedBatchNormGrad": (
        "x_backprop",
        "scale_backprop",
        "offset_backprop",
        "reserve_space_3",
        "reserve_space_4",
    ),
    "FusedBatchNormGradV3": (
        "x_backprop",
        "scale_backprop",
        "offset_backprop",
        "reserve_space_4",
        "reserve_space_5",
    ),
    "LogMatrixDeterminant": ("sign", "log_abs_determinant"),
    "LogUniformCandidateSampler": (
        "sampled_candidates",
        "true_expected_count",
        "sampled_expected_count",
    ),
    "UniformCandidateSampler": (
        "sampled_candidates",
        "true_expected_count",
        "sampled_expected_count",
    ),
    "ReaderReadV2": ("key", "value"),
    "ReaderReadUpToV2": ("keys", "values"),
    "SampleDistortedBoundingBoxV2": ("begin", "size", "bboxes"),
    "SparseCross": ("output_indices", "output_values", "output_shape"),
    "TensorArrayConcatV3": ("value", "lengths"),
    # list-valued outputs: (arg, the attr giving its length)
    "ParseExample": (
        ("sparse_indices", "Nsparse"),
        ("sparse_values", "sparse_types"),
        ("sparse_shapes", "Nsparse"),
        ("dense_values", "Tdense"),
    ),
    "ParseExampleV2": (
        ("sparse_indices", "num_sparse"),
        ("sparse_values", "sparse_types"),
        ("sparse_shapes", "num_sparse"),
        ("dense_values", "Tdense"),
        ("ragged_values", "ragged_value_types"),
        ("ragged_row_splits", "ragged_split_types"),
    ),
    "SparseSplit": (
        ("output_indices", "num_split"),
        ("output_values", "num_split"),
        ("output_shape", "num_split"),
    ),
    "StringSplitV2": ("indices", "values", "shape"),
    "Merge": ("output", "value_index"),
    "SoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "SparseSoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV2": (
        "y",
        "batch_mean",
        "batch_variance",
        "reserve_space_1",
        "reserve_space_2",
    ),
    "FusedBatchNormV3": (
        "y",
        "batch_mean",
        "batch_variance",
        "reserve_space_1",
        "reserve_space_2",
        "reserve_space_3",
    ),
    "MaxPoolWithArgmax": ("output", "argmax"),
    "BroadcastGradientArgs": ("r0", "r1"),
    "NonMaxSuppressionV4": ("selected_indices", "valid_outputs"),
    "NonMaxSuppressionV5": ("selected_indices", "selected_scores", "valid_outputs"),
    "CombinedNonMaxSuppression": (
        "nmsed_boxes",
        "nmsed_scores",
        "nmsed_classes",
        "valid_detections",
    ),
    "TensorArrayV3": ("handle", "flow"),
    "TensorArrayGradV3": ("grad_handle", "flow_out"),
    "LookupTableExportV2": ("keys", "values"),
    "Qr": ("q", "r"),
    "Svd": ("s", "u", "v"),
    "SelfAdjointEigV2": ("e", "v"),
    "SparseReorder": ("output_indices", "output_values"),
    "SparseReshape": ("output_indices", "output_shape"),
    "SparseConcat": ("output_indices", "output_values", "output_shape"),
    "SparseAdd": ("sum_indices", "sum_values", "sum_shape"),
    "SparseAddGrad": ("a_val_grad", "b_val_grad"),
    "SparseReduceSumSparse": ("output_indices", "output_values", "output_shape"),
    "SparseSlice": ("output_indices", "output_values", "output_shape"),
    "SparseFillEmptyRows": (
        "output_indices",
        "output_values",
        "empty_row_indicator",
        "reverse_index_map",
    ),
    "SparseFillEmptyRowsGrad": ("d_values", "d_default_value"),
}

CALL_OPS = frozenset(["StatefulPartitionedCall", "PartitionedCall"])

SAVER_OPS = frozenset(
    [
        "SaveV2",
        "RestoreV2",
        "MergeV2Checkpoints",
        "ShardedFilename",
        "StringJoin",
        "StaticRegexFullMatch",
        "DisableCopyOnRead",
        "Save",
        "SaveSlices",
        "Restore",
        "RestoreSlice",
    ]
)

# Attrs of no meaning outside TF's runtime, dropped from every node.
DROPPED_ALWAYS = frozenset(["_class", "_output_shapes"])

# TF's default values of attrs the engine requires, for graphs written with default attrs
# stripped (TF2 SavedModels are). A meta graph's stripped_op_list, when present, comes first.
TF_DEFAULTS: dict[str, object] = {
    "validate_shape": True,
    "use_locking": False,
    "container": "",
    "shared_name": "",
    "batch_dims": 0,
    "keep_dims": False,
    "transpose_a": False,
    "transpose_b": False,
    "adj_x": False,
    "adj_y": False,
    "data_format": "NHWC",
    "Truncate": False,
    "exclusive": False,
    "reverse": False,
    "begin_mask": 0,
    "end_mask": 0,
    "ellipsis_mask": 0,
    "new_axis_mask": 0,
    "shrink_axis_mask": 0,
    "squeeze_dims": (),
    "axis": 0,
    "sorted": True,
    "alpha": 0.2,
    "output_type": "int64",
    "out_type": "int32",
    "mode": "REFLECT",
}
