"""Exports Keras applications as TensorFlow SavedModels, for ``bench/real_models/check.py``.

Runs under TensorFlow (not the engine's venv): ``keras.applications`` built with random
weights (``weights=None``: nothing is downloaded), each exported with ``model.export`` to
``OUT/keras-NAME/1`` beside ``reference.npz`` (a fixed batch and TensorFlow's output).

    /tmp/tfvenv/bin/python bench/real_models/export_keras.py OUT [NAME ...]
"""

from __future__ import annotations

import os
import sys

import numpy as np

MODELS = {
    "MobileNetV2": 224,
    "MobileNetV3Small": 224,
    "ResNet50": 224,
    "DenseNet121": 224,
    "InceptionV3": 299,
    "Xception": 299,
    "EfficientNetB0": 224,
    "EfficientNetV2B0": 224,
    "NASNetMobile": 224,
    "ConvNeXtTiny": 224,
}


def main(argv: list[str]) -> int:
    import keras
    import tensorflow as tf

    out, names = argv[0], argv[1:] or list(MODELS)
    for name in names:
        path = os.path.join(out, f"keras-{name}")
        if os.path.exists(os.path.join(path, "reference.npz")):
            continue
        size = MODELS[name]
        keras.utils.set_random_seed(0)
        model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3))
        x = np.random.default_rng(0).uniform(0, 255, size=(2, size, size, 3)).astype(np.float32)
        y = np.asarray(model(x, training=False))
        model.export(os.path.join(path, "1"), verbose=False)
        np.savez(
            os.path.join(path, "reference.npz"),
            x=x,
            y=y,
            producer=f"tensorflow {tf.__version__}, keras {keras.__version__}",
        )
        print(f"{name}: exported", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
