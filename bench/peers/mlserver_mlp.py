"""An MLServer custom runtime serving the bench MLP (``mlp.py``: same seed, same numpy math).

Runs inside MLServer's own virtualenv (see ``setup.sh``); ``run.py`` writes the settings and
starts ``mlserver start`` with this directory on ``PYTHONPATH``, then names this class as the
model's ``implementation``:

    {"name": "mlp", "implementation": "mlserver_mlp.MLPRuntime"}

Requests are KServe V2: one FP32 input ``x`` of shape [N, 784]; the reply carries FP32
``probabilities`` of shape [N, 10]. With MLServer's adaptive batching on, MLServer merges
requests along the first axis before ``predict`` and splits the reply after it.
"""

from __future__ import annotations

import numpy as np
from mlp import INPUT_NAME, LAYERS, OUTPUT_NAME, numpy_mlp, weights
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.errors import InferenceError
from mlserver.types import InferenceRequest, InferenceResponse


class MLPRuntime(MLModel):
    """The numpy MLP as an MLServer model."""

    async def load(self) -> bool:
        self._mlp = numpy_mlp(weights())
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        inputs = [i for i in payload.inputs if i.name == INPUT_NAME]
        if not inputs:
            names = [i.name for i in payload.inputs]
            raise InferenceError(f"expected an input named {INPUT_NAME!r}, got {names}")
        x = NumpyCodec.decode_input(inputs[0])
        if x.ndim != 2 or x.shape[1] != LAYERS[0]:
            raise InferenceError(f"input {INPUT_NAME!r} must be [N, {LAYERS[0]}], got {x.shape}")
        y = self._mlp(np.asarray(x, dtype=np.float32))
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[NumpyCodec.encode_output(name=OUTPUT_NAME, payload=y)],
        )
