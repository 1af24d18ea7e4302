"""TF Serving's warmup file (assets.extra/tf_serving_warmup_requests): TFRecord framing with
its checksums, PredictionLog records, and the server running them at load or failing the
load with the reason."""

from __future__ import annotations

import json
import logging
import pathlib
import re
import shutil
import struct

import numpy as np
import pytest

from engine.formats.tensorflow.tensors import TFFormatError, array_to_proto
from engine.formats.tensorflow.tfrecord import encode_record, read_records, write_records
from service.app import create_app
from service.config import ServerConfig
from service.protocols.proto import tfserving_pb2 as pb
from service.protocols.tf_examples import CLASSIFY, REGRESS
from service.tf_warmup import MAX_WARMUP_RECORDS, WARMUP_FILE, WarmupError, read_warmup
from tests.service.test_grpc_tfserving import classifier, example

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "tensorflow"
TF_WRITTEN = FIXTURES / "warmup" / "tf_serving_warmup_requests"


def _predict_log(x, signature="serving_default", alias="x") -> bytes:
    request = pb.PredictRequest(model_spec=pb.ModelSpec(name="m", signature_name=signature))
    request.inputs[alias].CopyFrom(array_to_proto(np.asarray(x)))
    return pb.PredictionLog(predict_log=pb.PredictLog(request=request)).SerializeToString()


def test_reads_the_file_tensorflow_wrote():
    io = np.load(FIXTURES / "warmup" / "io.npz")
    requests = read_warmup(TF_WRITTEN)
    assert [r.signature_name for r in requests] == ["serving_default", ""]
    assert [r.method for r in requests] == [None, None]
    np.testing.assert_array_equal(requests[0].inputs["x"], io["x0"])
    np.testing.assert_array_equal(requests[1].inputs["x"], io["x1"])


def test_tfrecord_round_trip_and_framing_matches_tensorflow(tmp_path):
    # The bytes TF's TFRecordWriter wrote are exactly what encode_record writes.
    records = read_records(TF_WRITTEN)
    assert b"".join(encode_record(r) for r in records) == TF_WRITTEN.read_bytes()
    path = tmp_path / "r"
    write_records(path, [b"", b"abc", bytes(range(256))])
    assert read_records(path) == [b"", b"abc", bytes(range(256))]


def _damaged(tmp_path, how) -> pathlib.Path:
    data = bytearray(TF_WRITTEN.read_bytes())
    first = struct.unpack_from("<Q", data)[0]
    if how == "data_crc":
        data[12] ^= 0xFF  # first byte of record 0's data
    elif how == "length_crc":
        data[0] ^= 0x01
    elif how == "truncated":
        data = data[: 12 + first + 2]
    elif how == "trailing":
        data += b"\x01\x02"
    path = tmp_path / "w"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("data_crc", "record 0 at offset 0: corrupted record data"),
        ("length_crc", "record 0 at offset 0: corrupted record length"),
        ("truncated", "record 0 at offset 0: truncated record"),
        ("trailing", "record 2 at offset .*: truncated header"),
    ],
)
def test_damaged_files_fail_naming_the_record(tmp_path, how, message):
    with pytest.raises(TFFormatError, match=message):
        read_records(_damaged(tmp_path, how))
    with pytest.raises(WarmupError, match=message):
        read_warmup(_damaged(tmp_path, how))


def test_records_and_sizes_are_bounded(tmp_path):
    path = tmp_path / "many"
    write_records(path, [_predict_log([1.0])] * (MAX_WARMUP_RECORDS + 1))
    with pytest.raises(WarmupError, match=f"more than {MAX_WARMUP_RECORDS} records"):
        read_warmup(path)
    big = tmp_path / "big"
    write_records(big, [b"x" * 100])
    with pytest.raises(TFFormatError, match="100 bytes, over the 50-byte record limit"):
        read_records(big, max_record_bytes=50)
    with pytest.raises(TFFormatError, match="over the 64-byte limit"):
        read_records(big, max_file_bytes=64)
    # a length field announcing a huge record is refused before anything is allocated
    huge = tmp_path / "huge"
    huge.write_bytes(encode_record(b"abc").replace(struct.pack("<Q", 3), b"\0" * 8, 1))
    with pytest.raises(TFFormatError, match="corrupted record length"):
        read_records(huge)
    request = pb.PredictRequest()
    t = request.inputs["x"]
    t.dtype = 1  # DT_FLOAT
    t.tensor_shape.dim.add(size=1 << 40)
    log = pb.PredictionLog(predict_log=pb.PredictLog(request=request))
    write_records(path, [log.SerializeToString()])
    with pytest.raises(WarmupError, match="record 0: input 'x': shape .* over the"):
        read_warmup(path)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (b"\xff\xff\xff", "record 0 is not a PredictionLog"),
        (b"", "record 0: the PredictionLog holds no request"),
        (
            pb.PredictionLog(session_run_log=pb.SessionRunLog()).SerializeToString(),
            "Unsupported log_type for warmup: session_run_log",
        ),
        (
            pb.PredictionLog(predict_log=pb.PredictLog()).SerializeToString(),
            "PredictRequest has no inputs",
        ),
    ],
)
def test_bad_records_fail_with_the_reason(tmp_path, record, message):
    path = tmp_path / "w"
    write_records(path, [_predict_log([1.0]), record])
    with pytest.raises(WarmupError, match=message.replace("record 0", "record 1")):
        read_warmup(path)


def test_classify_regress_and_multi_inference_logs_become_examples(tmp_path):
    inp = pb.Input()
    ex = inp.example_list.examples.add()
    ex.features.feature["a"].float_list.value.append(1.5)
    classify = pb.PredictionLog(
        classify_log=pb.ClassifyLog(
            request=pb.ClassificationRequest(model_spec=pb.ModelSpec(signature_name="c"), input=inp)
        )
    )
    multi = pb.PredictionLog(
        multi_inference_log=pb.MultiInferenceLog(
            request=pb.MultiInferenceRequest(
                tasks=[
                    pb.InferenceTask(
                        model_spec=pb.ModelSpec(signature_name="c"), method_name=CLASSIFY
                    ),
                    pb.InferenceTask(
                        model_spec=pb.ModelSpec(signature_name="r"), method_name=REGRESS
                    ),
                ],
                input=inp,
            )
        )
    )
    path = tmp_path / "w"
    write_records(path, [classify.SerializeToString(), multi.SerializeToString()])
    requests = read_warmup(path)
    assert [(r.record, r.signature_name, r.method) for r in requests] == [
        (0, "c", CLASSIFY),
        (1, "c", CLASSIFY),
        (1, "r", REGRESS),
    ]
    assert pb.Example.FromString(requests[0].examples[0]) == ex


# -- the server ------------------------------------------------------------------------------


def _repo(tmp_path, records=None):
    version = tmp_path / "tf2" / "1"
    shutil.copytree(FIXTURES / "tf2_module", version)
    extra = version / "assets.extra"
    extra.mkdir()
    if records is None:
        shutil.copy(TF_WRITTEN, extra / "tf_serving_warmup_requests")
    else:
        write_records(extra / "tf_serving_warmup_requests", records)
    return tmp_path


async def _status(aiohttp_client, root):
    config = ServerConfig(model_repository=str(root), poll_interval=0, port=0).validate()
    client = await aiohttp_client(create_app(config))
    r = await client.get("/v1/models/tf2")
    return client, (await r.json())["model_version_status"][0]


async def test_server_runs_the_warmup_requests_at_load(aiohttp_client, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="flowserve.servable"):
        client, status = await _status(aiohttp_client, _repo(tmp_path))
    assert status["state"] == "AVAILABLE", status
    assert f"ran 2 warmup request(s) from {WARMUP_FILE}" in caplog.text
    io = np.load(FIXTURES / "tf2_module" / "io.npz")
    r = await client.post(
        "/v1/models/tf2:predict", data=json.dumps({"inputs": {"x": io["x"].tolist()}})
    )
    assert r.status == 200
    np.testing.assert_allclose((await r.json())["outputs"]["out"], io["out"], rtol=1e-5)


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([b"\x01"], "record 0 is not a PredictionLog"),
        ([_predict_log(np.zeros((1, 4), np.float32), alias="nope")], "record 0 failed: .*nope"),
        ([_predict_log(np.zeros((1, 3), np.float32))], "record 0 failed"),
        ([_predict_log(np.zeros((1, 4), np.float32), signature="other")], "unknown signature"),
    ],
)
async def test_a_bad_warmup_file_fails_the_load_with_the_reason(
    aiohttp_client, tmp_path, records, message
):
    _, status = await _status(aiohttp_client, _repo(tmp_path, records))
    assert status["state"] == "END"
    error = status["status"]["error_message"]
    assert WARMUP_FILE in error
    assert re.search(message, error), error


async def test_a_corrupted_warmup_file_fails_the_load(aiohttp_client, tmp_path):
    root = _repo(tmp_path)
    target = root / "tf2" / "1" / WARMUP_FILE
    shutil.copy(_damaged(tmp_path, "data_crc"), target)
    _, status = await _status(aiohttp_client, root)
    assert status["state"] == "END"
    assert "checksum mismatch" in status["status"]["error_message"]


def _classify_records(signature_for_classify="serving_default"):
    inp = pb.Input()
    inp.example_list.examples.add().CopyFrom(example(age=42, name=b"ada"))
    spec = pb.ModelSpec
    classify = pb.PredictionLog(
        classify_log=pb.ClassifyLog(
            request=pb.ClassificationRequest(
                model_spec=spec(signature_name=signature_for_classify), input=inp
            )
        )
    )
    regress = pb.PredictionLog(
        regress_log=pb.RegressLog(
            request=pb.RegressionRequest(model_spec=spec(signature_name="regress"), input=inp)
        )
    )
    multi = pb.PredictionLog(
        multi_inference_log=pb.MultiInferenceLog(
            request=pb.MultiInferenceRequest(
                tasks=[
                    pb.InferenceTask(model_spec=spec(signature_name="regress"), method_name=REGRESS)
                ],
                input=inp,
            )
        )
    )
    return [r.SerializeToString() for r in (classify, regress, multi)]


async def test_classify_regress_and_multi_inference_warmup_run_at_load(
    aiohttp_client, tmp_path, caplog
):
    version = tmp_path / "classifier" / "1"
    classifier(version)
    (version / "assets.extra").mkdir()
    write_records(version / WARMUP_FILE, _classify_records())
    config = ServerConfig(model_repository=str(tmp_path), poll_interval=0, port=0).validate()
    with caplog.at_level(logging.INFO, logger="flowserve.servable"):
        client = await aiohttp_client(create_app(config))
    r = await client.get("/v1/models/classifier")
    status = (await r.json())["model_version_status"][0]
    assert status["state"] == "AVAILABLE", status
    assert f"ran 3 warmup request(s) from {WARMUP_FILE}" in caplog.text


async def test_classify_warmup_on_a_predict_signature_fails_the_load(aiohttp_client, tmp_path):
    version = tmp_path / "classifier" / "1"
    classifier(version)
    (version / "assets.extra").mkdir()
    write_records(version / WARMUP_FILE, _classify_records("predict")[:1])
    config = ServerConfig(model_repository=str(tmp_path), poll_interval=0, port=0).validate()
    client = await aiohttp_client(create_app(config))
    r = await client.get("/v1/models/classifier")
    status = (await r.json())["model_version_status"][0]
    assert status["state"] == "END"
    assert "record 0 failed" in status["status"]["error_message"]
    assert "tensorflow/serving/classify" in status["status"]["error_message"]
