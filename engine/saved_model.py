"""The ``engine.saved_model`` namespace (TF1's ``tf.saved_model``)."""

from types import SimpleNamespace

from engine.saving.saved_model import (  # noqa: F401
    ASSETS_DIRECTORY,
    CLASSIFY_METHOD_NAME,
    DEFAULT_SERVING_SIGNATURE_DEF_KEY,
    GPU,
    PREDICT_INPUTS,
    PREDICT_METHOD_NAME,
    PREDICT_OUTPUTS,
    REGRESS_METHOD_NAME,
    SAVED_MODEL_FILENAME,
    SERVING,
    TRAINING,
    VARIABLES_DIRECTORY,
    VARIABLES_FILENAME,
    Builder,
    LoadOptions,
    MetaGraphDef,
    SavedModelBuilder,
    SignatureDef,
    TensorInfo,
    build_signature_def,
    build_tensor_info,
    contains_saved_model,
    load,
    predict_signature_def,
    read_saved_model,
    simple_save,
)

builder = SimpleNamespace(SavedModelBuilder=Builder)
loader = SimpleNamespace(load=load, maybe_saved_model_directory=contains_saved_model)
tag_constants = SimpleNamespace(SERVING=SERVING, TRAINING=TRAINING, GPU=GPU)
signature_constants = SimpleNamespace(
    DEFAULT_SERVING_SIGNATURE_DEF_KEY=DEFAULT_SERVING_SIGNATURE_DEF_KEY,
    PREDICT_METHOD_NAME=PREDICT_METHOD_NAME,
    CLASSIFY_METHOD_NAME=CLASSIFY_METHOD_NAME,
    REGRESS_METHOD_NAME=REGRESS_METHOD_NAME,
    PREDICT_INPUTS=PREDICT_INPUTS,
    PREDICT_OUTPUTS=PREDICT_OUTPUTS,
)
signature_def_utils = SimpleNamespace(
    predict_signature_def=predict_signature_def, build_signature_def=build_signature_def
)
utils = SimpleNamespace(build_tensor_info=build_tensor_info)
