"""The ``engine.nn`` namespace (TF1's ``tf.nn``)."""

from engine import rnn_cell  # noqa: F401
from engine.ops.activations import gelu, selu  # noqa: F401
from engine.ops.array import stop_gradient  # noqa: F401
from engine.ops.ctc_ops import ctc_greedy_decoder, ctc_loss  # noqa: F401
from engine.ops.embedding import (  # noqa: F401
    embedding_lookup,
    log_uniform_candidate_sampler,
    nce_loss,
    sampled_softmax_loss,
    uniform_candidate_sampler,
)
from engine.ops.lrn import *  # noqa: F401,F403
from engine.ops.math import sigmoid, tanh  # noqa: F401
from engine.ops.nn import *  # noqa: F401,F403
from engine.ops.nn_conv import *  # noqa: F401,F403
from engine.ops.nn_conv3d import *  # noqa: F401,F403
from engine.ops.nn_impl import *  # noqa: F401,F403
from engine.ops.nn_losses import *  # noqa: F401,F403
from engine.ops.partition_ops import depth_to_space, space_to_batch, space_to_depth  # noqa: F401
from engine.rnn import (  # noqa: F401
    bidirectional_dynamic_rnn,
    dynamic_rnn,
    static_bidirectional_rnn,
    static_rnn,
)
from engine.sparse_embedding import (  # noqa: F401
    embedding_lookup_sparse,
    safe_embedding_lookup_sparse,
)
