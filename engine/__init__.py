"""flowserve's dataflow engine: TensorFlow 1.x graphs and sessions on numpy and cupy.

``import engine as tf`` runs classic TF1 graph-mode programs for the subset covered::

    import engine as tf

    x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
    y = tf.reduce_sum(tf.square(x), axis=1)
    with tf.Session() as sess:
        print(sess.run(y, {x: [[1.0, 2.0, 3.0]]}))
"""

from __future__ import annotations

import sys as _sys

from engine import (
    app,
    data,
    distributions,  # noqa: E402 - tf.distributions (TF 1.x)
    dtypes,
    errors,
    estimator,
    feature_column,
    flags,
    graph_util,
    image,
    initializers,
    io,
    layers,
    lookup,
    losses,
    metrics,
    nn,
    python_io,
    resource_loader,
    saved_model,
    strings,
    summary,
    tensor_shape,
    test,
    train,
)
from engine import data_files as _data_files
from engine import estimator_canned as _estimator_canned
from engine import losses_more as _losses_more
from engine import tf_logging as logging
from engine import tf_namespaces as _tf_namespaces
from engine.config import (
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from engine.contrib import contrib
from engine.decode_ops import (
    decode_csv,
    decode_raw,
    encode_base64,
    parse_tensor,
    serialize_tensor,
)
from engine.dtypes import (
    DType,
    as_dtype,
    bool,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    variant,
)
from engine.file_io import camel_case_namespace as _gfile_namespace
from engine.framework.constant_op import (
    constant,
    convert_to_tensor,
    register_tensor_conversion_function,
)
from engine.framework.device_spec import DeviceSpec
from engine.framework.graph import (
    Graph,
    GraphKeys,
    NodeDef,
    Operation,
    Tensor,
    add_to_collection,
    add_to_collections,
    colocate_with,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    get_name_scope,
    name_scope,
    reset_default_graph,
)
from engine.framework.registry import not_differentiable as NotDifferentiable  # noqa: N812
from engine.framework.tensor_util import constant_value
from engine.gradients import AggregationMethod, RegisterGradient, gradients, hessians
from engine.image_codec_ops import read_file, write_file
from engine.image_geometry import random_crop
from engine.init_ops import (
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from engine.init_ops_more import orthogonal_initializer, uniform_unit_scaling_initializer
from engine.ops import audio_ops as _audio_ops  # noqa: E402
from engine.ops.activations import erf
from engine.ops.array import *  # noqa: F403
from engine.ops.array_impl import (
    argsort,
    eye,
    lin_space,
    linspace,
    meshgrid,
    norm,
    sort,
)
from engine.ops.array_transform import *  # noqa: F403
from engine.ops.bitcast import bitcast
from engine.ops.case_op import case
from engine.ops.check_ops_more import check_numerics, verify_tensor_all_finite
from engine.ops.clip_ops import (
    clip_by_average_norm,
    clip_by_global_norm,
    clip_by_norm,
    clip_by_value,
    global_norm,
)
from engine.ops.control_flow import (  # noqa: A004
    cond,
    group,
    no_op,
    tuple,
    while_loop,
    with_dependencies,
)
from engine.ops.decompositions import qr, self_adjoint_eig, self_adjoint_eigvals, svd
from engine.ops.functional_ops import foldl, foldr, map_fn, scan
from engine.ops.image_patches import extract_image_patches
from engine.ops.linalg import *  # noqa: F403
from engine.ops.linalg_ops import (
    cholesky,
    diag,
    diag_part,
    matrix_band_part,
    matrix_determinant,
    matrix_diag,
    matrix_diag_part,
    matrix_inverse,
    matrix_set_diag,
    matrix_solve,
    matrix_transpose,
    matrix_triangular_solve,
    trace,
)
from engine.ops.logging_ops import *  # noqa: F403
from engine.ops.lookup import tables_initializer
from engine.ops.math import (  # noqa: A004
    abs,
    add,
    add_n,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    cast,
    ceil,
    cos,
    div,
    divide,
    equal,
    exp,
    expm1,
    floor,
    floor_div,
    floordiv,
    floormod,
    greater,
    greater_equal,
    invert,
    is_finite,
    is_inf,
    is_nan,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    matmul,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    pow,
    realdiv,
    reciprocal,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    squared_difference,
    subtract,
    tan,
    tanh,
    to_double,
    to_float,
    to_int32,
    to_int64,
    truediv,
    where,
    where_v2,
)
from engine.ops.math_impl import log_sigmoid
from engine.ops.math_more import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cosh,
    digamma,
    div_no_nan,
    erfc,
    lgamma,
    polygamma,
    rint,
    sinh,
    truncatediv,
    truncatemod,
)
from engine.ops.partition_ops import (
    batch_to_space,
    batch_to_space_nd,
    depth_to_space,
    dynamic_partition,
    dynamic_stitch,
    parallel_dynamic_stitch,
    space_to_batch,
    space_to_batch_nd,
    space_to_depth,
)
from engine.ops.random import (
    get_seed,
    random_normal,
    random_uniform,
    set_random_seed,
    truncated_normal,
)
from engine.ops.random_more import multinomial, random_shuffle
from engine.ops.reduction import *  # noqa: F403
from engine.ops.script import *  # noqa: F403
from engine.ops.segment_ops import (
    gather_nd,
    scatter_nd,
    segment_max,
    segment_mean,
    segment_min,
    segment_prod,
    segment_sum,
    unsorted_segment_max,
    unsorted_segment_mean,
    unsorted_segment_min,
    unsorted_segment_prod,
    unsorted_segment_sqrt_n,
    unsorted_segment_sum,
)
from engine.ops.set_ops import (
    ensure_shape,
    repeat,
    roll,
    setdiff1d,
    unique,
    unique_with_counts,
)
from engine.ops.slicing import *  # noqa: F403
from engine.ops.sparse_segment_ops import (
    sparse_segment_mean,
    sparse_segment_sqrt_n,
    sparse_segment_sum,
)
from engine.ops.state import assign, assign_add, assign_sub, count_up_to
from engine.ops.string_hash import string_to_hash_bucket_fast, string_to_hash_bucket_strong
from engine.ops.string_ops import as_string, decode_base64, string_to_number, substr
from engine.ops.tensor_array import TensorArray
from engine.parsing import (
    FixedLenFeature,
    SparseFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from engine.queues import (
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)
from engine.readers import (
    FixedLengthRecordReader,
    IdentityReader,
    ReaderBase,
    TextLineReader,
    TFRecordReader,
    WholeFileReader,
)
from engine.rnn import reverse_sequence, sequence_mask
from engine.saving.graph_def import GraphDef, import_graph_def
from engine.saving.optimize import OptimizeReport, optimize
from engine.session import InteractiveSession, Session, get_default_session
from engine.sparse_api import (
    SparseTensor,
    SparseTensorValue,
    sparse_add,
    sparse_concat,
    sparse_fill_empty_rows,
    sparse_placeholder,
    sparse_reduce_sum,
    sparse_reduce_sum_sparse,
    sparse_reorder,
    sparse_reshape,
    sparse_retain,
    sparse_slice,
    sparse_softmax,
    sparse_split,
    sparse_tensor_dense_matmul,
    sparse_tensor_to_dense,
    sparse_to_dense,
)
from engine.sparse_api import build_namespace as _sparse_namespace
from engine.strings_more import join as string_join
from engine.strings_more import reduce_join, regex_replace, string_split
from engine.strings_more import strip as string_strip
from engine.strings_more import to_hash_bucket as string_to_hash_bucket
from engine.summary.proto import SessionLog, Summary
from engine.tensor_shape import Dimension, TensorShape
from engine.util.namespaces import namespace as _namespace
from engine.variable_scope import (
    AUTO_REUSE,
    VariableScope,
    get_local_variable,
    get_variable,
    get_variable_scope,
    make_template,
    no_regularizer,
    variable_op_scope,
    variable_scope,
)
from engine.variables import (
    Variable,
    all_variables,
    global_variables,
    global_variables_initializer,
    initialize_all_variables,
    initialize_local_variables,
    initialize_variables,
    is_tensor,
    is_variable_initialized,
    local_variables,
    local_variables_initializer,
    model_variables,
    moving_average_variables,
    report_uninitialized_variables,
    trainable_variables,
    variables_initializer,
)
from engine.version import __version__

Variable._overload_operators()


sub = subtract
mul = multiply
arg_max = argmax  # noqa: F405 - from engine.ops.reduction
arg_min = argmin  # noqa: F405

# ONNX import/export and tf.keras (TF1 graph mode) build on the names above.
from engine import keras, onnx  # noqa: E402

# TF1 names whose subsystems the engine deliberately does not have (issue 12's scope): a
# program using them gets an error naming why, not a bare missing attribute.
_OUT_OF_SCOPE = {
    "enable_eager_execution": "eager execution (the engine runs TF1 graphs in sessions)",
    "enable_v2_behavior": "TF2 behaviour (eager execution, tf.function; the engine runs TF1 "
    "graphs in sessions)",
}


# The rest of TF1's tf.losses, built on engine/losses.py's weighting (engine/losses_more.py).
for _name in _losses_more.__all__:
    setattr(losses, _name, getattr(_losses_more, _name))

# tf.data's file datasets subclass Dataset, so they live beside it (engine/data_files.py).
data.TFRecordDataset = _data_files.TFRecordDataset
data.TextLineDataset = _data_files.TextLineDataset
data.FixedLengthRecordDataset = _data_files.FixedLengthRecordDataset

# tf.compat (TF 1.15's helpers) with tf.compat.v1: the engine itself, also importable as
# ``import engine.compat.v1 as tf`` (programs written for tensorflow.compat.v1).
from engine import compat  # noqa: E402

compat.v1 = _sys.modules[__name__]
_sys.modules["engine.compat.v1"] = compat.v1

# tf.math, tf.random and tf.linalg (TF 1.13+'s names), over the functions bound above.
math, random, linalg = _tf_namespaces.build(globals(), nn)
# tf.debugging, tf.bitwise and tf.manip (TF 1.15's names).
debugging, bitwise, manip = _tf_namespaces.build_more(globals())
sparse = _sparse_namespace()  # tf.sparse (TF 1.15's names)
queue = _namespace(  # tf.queue (TF 1.13+'s names for the queues)
    "tf.queue",
    FIFOQueue=FIFOQueue,
    PaddingFIFOQueue=PaddingFIFOQueue,
    PriorityQueue=PriorityQueue,
    QueueBase=QueueBase,
    RandomShuffleQueue=RandomShuffleQueue,
)
# tf.estimator's canned estimators (LinearClassifier, DNNClassifier, ...) are defined over
# engine.estimator.Estimator, so they join its namespace here rather than in it.
for _name in _estimator_canned.__all__:
    setattr(estimator, _name, getattr(_estimator_canned, _name))
gfile = _gfile_namespace()  # tf.gfile (TF1's CamelCase file API; tf.io.gfile is snake_case)
audio = _namespace(  # tf.audio (TF 1.14+); the spectrogram and MFCC ops TF keeps in raw ops
    "tf.audio",
    decode_wav=_audio_ops.decode_wav,
    encode_wav=_audio_ops.encode_wav,
    audio_spectrogram=_audio_ops.audio_spectrogram,
    mfcc=_audio_ops.mfcc,
)


def disable_eager_execution() -> None:
    """Nothing to do: the engine always builds graphs and runs them in sessions. (Programs
    written for ``import tensorflow.compat.v1 as tf`` call it first.)"""


def disable_v2_behavior() -> None:
    """Nothing to do: the engine has TF1's behaviour only (graphs, sessions, TF1 variables and
    control flow). (Programs written for ``tensorflow.compat.v1`` call it first.)"""


def executing_eagerly() -> bool:
    """Always False: the engine builds graphs and runs them in sessions (TF1 semantics)."""
    return False


def __getattr__(name):
    why = _OUT_OF_SCOPE.get(name)
    if why is None:
        raise AttributeError(f"module 'engine' has no attribute '{name}'")
    raise AttributeError(f"tf.{name} is not available in flowserve's engine: {why} is out of scope")
