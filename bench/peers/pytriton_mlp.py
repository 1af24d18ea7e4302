"""Triton Inference Server (through PyTriton) serving the bench MLP (``mlp.py``'s numpy math).

Runs inside the PyTriton virtualenv (Python 3.12, see ``setup.sh``): the ``nvidia-pytriton``
wheel ships a real ``tritonserver`` whose python backend stub links ``libpython3.12.so``, so
that Python's ``lib`` directory must be on ``LD_LIBRARY_PATH``. ``run.py`` starts it as

    LD_LIBRARY_PATH=<python3.12 prefix>/lib PYTHONPATH=bench/peers \\
        /work/venvs/pytriton/bin/python bench/peers/pytriton_mlp.py \\
        --http-port P --grpc-port G --metrics-port M --batching on|off

and drives it over HTTP with KServe V2 JSON: FP32 input ``x`` [N, 784], FP32 output
``probabilities`` [N, 10]. ``--batching on`` turns on Triton's dynamic batcher (requests
merged up to ``--max-batch-size`` rows, waiting at most ``--max-queue-delay-us``); ``off``
declares the model without a batch dimension, so each request runs alone.
"""

from __future__ import annotations

import argparse
import logging
import signal

import numpy as np
from mlp import INPUT_NAME, LAYERS, MODEL_NAME, OUTPUT_NAME, numpy_mlp, weights
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig


def model_config(batching: bool, max_batch_size: int, max_queue_delay_us: int):
    """PyTriton's model config and the input/output shapes that go with it."""
    if batching:
        config = ModelConfig(
            batching=True,
            max_batch_size=max_batch_size,
            batcher=DynamicBatcher(max_queue_delay_microseconds=max_queue_delay_us),
        )
        return config, (LAYERS[0],), (LAYERS[-1],)
    return ModelConfig(batching=False), (-1, LAYERS[0]), (-1, LAYERS[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--batching", choices=["on", "off"], default="off")
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--max-queue-delay-us", type=int, default=0)
    parser.add_argument("--instances", type=int, default=1, help="model instances")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    mlp = numpy_mlp(weights())

    @batch
    def infer(**inputs: np.ndarray) -> dict[str, np.ndarray]:
        x = np.asarray(inputs[INPUT_NAME], dtype=np.float32)
        return {OUTPUT_NAME: mlp(x)}

    config, in_shape, out_shape = model_config(
        args.batching == "on", args.max_batch_size, args.max_queue_delay_us
    )
    triton_config = TritonConfig(
        http_address="127.0.0.1",
        http_port=args.http_port,
        grpc_address="127.0.0.1",
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        log_verbose=0,
    )
    # SIGTERM (how run.py stops it) acts as Ctrl+C, from the first moment: the model is ready
    # (and may be stopped) while bind() still runs. Either way it leaves through the context
    # manager, which stops tritonserver and its stubs and removes PyTriton's workspace.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with Triton(config=triton_config) as triton:
        triton.bind(
            model_name=MODEL_NAME,
            infer_func=[infer] * args.instances,
            inputs=[Tensor(name=INPUT_NAME, dtype=np.float32, shape=in_shape)],
            outputs=[Tensor(name=OUTPUT_NAME, dtype=np.float32, shape=out_shape)],
            config=config,
            strict=True,
        )
        triton.serve()


if __name__ == "__main__":
    main()
