"""The ``engine.train`` namespace (TF1's ``tf.train``): optimizers, global step, checkpoints."""

from engine.formats.tensorflow.proto.example_pb2 import Example, SequenceExample  # noqa: F401
from engine.formats.tensorflow.proto.feature_pb2 import (  # noqa: F401
    BytesList,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
)
from engine.formats.tensorflow.saved_model import import_meta_graph  # noqa: F401
from engine.saving.graph_def import write_graph  # noqa: F401
from engine.saving.meta_graph import export_meta_graph  # noqa: F401
from engine.training.basic_session_run_hooks import (  # noqa: F401
    CheckpointSaverHook,
    CheckpointSaverListener,
    FeedFnHook,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
)
from engine.training.checkpoint_utils import (  # noqa: F401
    CheckpointReader,
    NewCheckpointReader,
    list_variables,
    load_checkpoint,
    load_variable,
)
from engine.training.coordinator import Coordinator, start_queue_runners  # noqa: F401
from engine.training.input import (  # noqa: F401
    batch,
    batch_join,
    input_producer,
    limit_epochs,
    maybe_batch,
    maybe_batch_join,
    maybe_shuffle_batch,
    maybe_shuffle_batch_join,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)
from engine.training.learning_rate_decay import (  # noqa: F401
    cosine_decay,
    cosine_decay_restarts,
    exponential_decay,
    inverse_time_decay,
    linear_cosine_decay,
    natural_exp_decay,
    noisy_linear_cosine_decay,
    piecewise_constant,
    piecewise_constant_decay,
    polynomial_decay,
)
from engine.training.monitored_session import (  # noqa: F401
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    Scaffold,
    SessionCreator,
    SingularMonitoredSession,
    WorkerSessionCreator,
)
from engine.training.moving_averages import (  # noqa: F401
    ExponentialMovingAverage,
    assign_moving_average,
)
from engine.training.optimizer import (  # noqa: F401
    AdagradOptimizer,
    AdamOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
    RMSPropOptimizer,
)
from engine.training.optimizers_more import (  # noqa: F401
    AdadeltaOptimizer,
    FtrlOptimizer,
    ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer,
)
from engine.training.queue_runner import QueueRunner, add_queue_runner  # noqa: F401
from engine.training.saver import (  # noqa: F401
    CheckpointState,
    Saver,
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
    update_checkpoint_state,
)
from engine.training.session_run_hook import (  # noqa: F401
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from engine.training.supervisor import Supervisor  # noqa: F401
from engine.training.training_util import (  # noqa: F401
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)
from engine.util.namespaces import namespace as _namespace

# tf.train.queue_runner: TF 1.15's module of the queue runner names.
queue_runner = _namespace(
    "tf.train.queue_runner",
    QueueRunner=QueueRunner,
    add_queue_runner=add_queue_runner,
    start_queue_runners=start_queue_runners,
)
