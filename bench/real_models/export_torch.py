"""Exports PyTorch models to ONNX, for ``bench/real_models/check.py``.

Runs under PyTorch (not the engine's venv): torchvision's classification, detection,
segmentation and video models and Hugging Face transformers, all with random weights
(nothing is downloaded), exported by ``torch.onnx.export`` (the TorchScript exporter, and
the dynamo exporter where named ``*-dynamo``), then post-processed the ways users do with
onnxruntime's own tools (``*-ortopt``: onnxruntime.transformers' optimizer, which writes
com.microsoft fused operators; ``*-int8``: ``quantize_dynamic``). Each model lands in
``OUT/NAME/1/model.onnx`` beside ``reference.npz`` (the inputs and PyTorch's outputs).

    /tmp/torchvenv/bin/python bench/real_models/export_torch.py OUT [NAME ...]
"""

from __future__ import annotations

import os
import sys

import numpy as np


def _vision(name, shape, **kw):
    def build():
        import torchvision

        space = torchvision.models
        for part in name.split(".")[:-1]:
            space = getattr(space, part)
        model = getattr(space, name.split(".")[-1])(weights=None, **kw)
        return model, (_image(shape),)

    return build


def _detection(name, size):
    def build():
        import torchvision

        ctor = getattr(torchvision.models.detection, name)
        model = ctor(weights=None, weights_backbone=None, box_score_thresh=0.0)
        return model, (_image((1, 3, size, size)),)

    return build


def _segmentation(name):
    def build():
        import torchvision

        model = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)
        return _First(model), (_image((1, 3, 224, 224)),)

    return build


def _image(shape):
    import torch

    return torch.from_numpy(np.random.default_rng(0).uniform(0, 1, size=shape).astype(np.float32))


class _First:
    """A segmentation model's ``out`` entry (its outputs are a dict)."""

    def __new__(cls, model):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model(x)["out"]

        return Wrapped()


def _Keywords(model):
    """``model(input_ids=..., attention_mask=...)`` as a module taking them positionally."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
            return out[0]

    return Wrapped()


def _rnn():
    import torch

    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 32)
            self.lstm = torch.nn.LSTM(32, 48, num_layers=2, bidirectional=True, batch_first=True)
            self.gru = torch.nn.GRU(96, 24, batch_first=True)
            self.head = torch.nn.Linear(24, 5)

        def forward(self, ids):
            h, _ = self.lstm(self.embed(ids))
            h, _ = self.gru(h)
            return self.head(h)

    ids = torch.from_numpy(np.random.default_rng(0).integers(0, 100, size=(3, 11)))
    return Tagger(), (ids,)


def _encoder():
    import torch

    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return model, (torch.randn(2, 10, 64, generator=torch.Generator().manual_seed(0)),)


def _hf(kind):
    def build():
        import torch
        import transformers

        torch.manual_seed(0)
        if kind == "bert":
            cfg = transformers.BertConfig(
                hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256
            )
            model = transformers.BertModel(cfg)
        else:
            cfg = transformers.GPT2Config(n_embd=128, n_layer=2, n_head=4, use_cache=False)
            model = transformers.GPT2LMHeadModel(cfg)
        model = _Keywords(model)
        rng = np.random.default_rng(0)
        ids = torch.from_numpy(rng.integers(0, 1000, size=(2, 16)))
        mask = torch.ones(2, 16, dtype=torch.int64)
        mask[1, 12:] = 0
        return model, (ids, mask)

    return build


MODELS = {
    "resnet18": _vision("resnet18", (2, 3, 224, 224)),
    "mobilenet_v3_small": _vision("mobilenet_v3_small", (2, 3, 224, 224)),
    "efficientnet_b0": _vision("efficientnet_b0", (2, 3, 224, 224)),
    "convnext_tiny": _vision("convnext_tiny", (1, 3, 224, 224)),
    "regnet_y_400mf": _vision("regnet_y_400mf", (2, 3, 224, 224)),
    "squeezenet1_1": _vision("squeezenet1_1", (2, 3, 224, 224)),
    "densenet121": _vision("densenet121", (1, 3, 224, 224)),
    "shufflenet_v2_x1_0": _vision("shufflenet_v2_x1_0", (2, 3, 224, 224)),
    "googlenet": _vision("googlenet", (1, 3, 224, 224), aux_logits=False, init_weights=True),
    "swin_t": _vision("swin_t", (1, 3, 224, 224)),
    "r3d_18": _vision("video.r3d_18", (1, 3, 8, 112, 112)),
    "ssdlite320_mobilenet_v3_large": _detection("ssdlite320_mobilenet_v3_large", 320),
    "fasterrcnn_mobilenet_v3_large_320_fpn": _detection(
        "fasterrcnn_mobilenet_v3_large_320_fpn", 320
    ),
    "lraspp_mobilenet_v3_large": _segmentation("lraspp_mobilenet_v3_large"),
    "deeplabv3_mobilenet_v3_large": _segmentation("deeplabv3_mobilenet_v3_large"),
    "lstm_gru_tagger": _rnn,
    "transformer_encoder": _encoder,
    "bert": _hf("bert"),
    "gpt2": _hf("gpt2"),
}
DYNAMO = ("resnet18", "bert", "transformer_encoder")
ORT_OPTIMIZED = {"bert": "bert", "gpt2": "gpt2"}
INT8 = ("bert", "resnet18")


def _outputs(result):
    import torch

    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, dict):
        return [v for v in result.values() if isinstance(v, torch.Tensor)]
    out = []
    for r in result:
        out.extend(_outputs(r))
    return out


def _save(path, onnx_path, inputs, outputs, producer):
    os.makedirs(os.path.dirname(onnx_path), exist_ok=True)
    arrays = {f"input_{i}": t.numpy() for i, t in enumerate(inputs)}
    arrays |= {f"output_{i}": t.detach().numpy() for i, t in enumerate(outputs)}
    np.savez(os.path.join(path, "reference.npz"), producer=producer, **arrays)


def _export(name, out):
    import torch

    model, inputs = MODELS[name]()
    model.eval()
    with torch.no_grad():
        outputs = _outputs(model(*inputs))
    names = [f"input_{i}" for i in range(len(inputs))]
    producer = f"torch {torch.__version__}"
    path = os.path.join(out, name)
    onnx_path = os.path.join(path, "1", "model.onnx")
    if not os.path.exists(os.path.join(path, "reference.npz")):
        os.makedirs(os.path.dirname(onnx_path), exist_ok=True)
        torch.onnx.export(
            model, inputs, onnx_path, input_names=names, opset_version=17, dynamo=False
        )
        _save(path, onnx_path, inputs, outputs, producer)
        print(f"{name}: exported", flush=True)
    if name in DYNAMO:
        dpath = os.path.join(out, f"{name}-dynamo")
        if not os.path.exists(os.path.join(dpath, "reference.npz")):
            dfile = os.path.join(dpath, "1", "model.onnx")
            os.makedirs(os.path.dirname(dfile), exist_ok=True)
            program = torch.onnx.export(
                model, inputs, dynamo=True, input_names=names, optimize=False
            )
            program.save(dfile)
            _save(dpath, dfile, inputs, outputs, producer + " (dynamo exporter)")
            print(f"{name}-dynamo: exported", flush=True)
    return path, onnx_path, inputs, outputs, producer


def _post_process(name, _path, onnx_path, inputs, outputs, producer, out):
    if name in ORT_OPTIMIZED:
        from onnxruntime.transformers import optimizer

        opath = os.path.join(out, f"{name}-ortopt")
        if not os.path.exists(os.path.join(opath, "reference.npz")):
            ofile = os.path.join(opath, "1", "model.onnx")
            os.makedirs(os.path.dirname(ofile), exist_ok=True)
            opt = optimizer.optimize_model(
                onnx_path, model_type=ORT_OPTIMIZED[name], num_heads=4, hidden_size=128
            )
            opt.save_model_to_file(ofile)
            _save(opath, ofile, inputs, outputs, producer + " + onnxruntime.transformers optimizer")
            print(f"{name}-ortopt: written", flush=True)
    if name in INT8:
        from onnxruntime.quantization import quantize_dynamic

        qpath = os.path.join(out, f"{name}-int8")
        if not os.path.exists(os.path.join(qpath, "reference.npz")):
            qfile = os.path.join(qpath, "1", "model.onnx")
            os.makedirs(os.path.dirname(qfile), exist_ok=True)
            quantize_dynamic(onnx_path, qfile)
            # The reference of a quantized model is onnxruntime's own run of it (check.py).
            _save(qpath, qfile, inputs, [], producer + " + onnxruntime quantize_dynamic")
            print(f"{name}-int8: written", flush=True)


def main(argv: list[str]) -> int:
    out, names = argv[0], argv[1:] or list(MODELS)
    for name in names:
        try:
            _post_process(name, *_export(name, out), out)
        except Exception as e:  # one model's failure does not stop the others
            print(f"{name}: export failed: {type(e).__name__}: {e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
