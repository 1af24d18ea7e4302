"""Triton's model control modes: none, poll and explicit (with --load-model)."""

import numpy as np
import pytest

from service.cli import build_parser, resolve_config
from service.config import ConfigError, ServerConfig
from service.errors import FailedPrecondition, Unavailable
from tests.service import models
from tests.service.serving import ServerThread

httpclient = pytest.importorskip("tritonclient.http")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException


def repo(root):
    models.half_plus_two(root / "a" / "1")
    models.half_plus_two(root / "b" / "1")
    models.strings(root / "c" / "1")
    return root


async def test_explicit_mode_loads_only_named_models(tmp_path, manager_for):
    m = await manager_for(repo(tmp_path), model_control_mode="explicit", load_model="a,c")
    assert m.resolve("a").version == 1 and m.resolve("c").version == 1
    with pytest.raises(Unavailable):
        m.resolve("b")
    index = {(s.model, s.state) for s in m.index()}
    assert ("b", "UNLOADED") in index and ("a", "AVAILABLE") in index
    await m.load_model("b")
    assert m.resolve("b").version == 1
    # A load re-reads the model from disk: a new version appears on the next load only.
    models.half_plus_two(tmp_path / "b" / "2", b=7.0)
    assert m.resolve("b").version == 1
    await m.load_model("b")
    assert m.resolve("b").version == 2


async def test_explicit_mode_star_loads_everything(tmp_path, manager_for):
    m = await manager_for(repo(tmp_path), model_control_mode="explicit", load_model="*")
    assert [m.resolve(n).version for n in "abc"] == [1, 1, 1]


async def test_none_mode_refuses_model_control(tmp_path, manager_for):
    m = await manager_for(repo(tmp_path), model_control_mode="none")
    assert m.resolve("b").version == 1
    for call in (m.load_model, m.unload_model):
        with pytest.raises(FailedPrecondition, match="model-control-mode none"):
            await call("a")


def test_flags_and_validation(tmp_path):
    args = build_parser().parse_args(
        [
            "--model-repository",
            str(tmp_path),
            "--model-control-mode",
            "explicit",
            "--load-model",
            "a",
            "--load-model",
            "b",
        ]
    )
    config = resolve_config(args, environ={})
    assert config.startup_models == ["a", "b"] and not config.polls
    with pytest.raises(ConfigError, match="none, poll or explicit"):
        ServerConfig(model_repository=str(tmp_path), model_control_mode="manual").validate()
    with pytest.raises(ConfigError, match="explicit only"):
        ServerConfig(model_repository=str(tmp_path), load_model="a").validate()


def test_tritonclient_explicit_flow(tmp_path):
    config = ServerConfig(
        model_repository=str(repo(tmp_path)),
        port=0,
        model_control_mode="explicit",
        load_model="a",
    ).validate()
    with ServerThread(config) as s:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        try:
            assert client.is_model_ready("a") and not client.is_model_ready("b")
            index = {r["name"]: r for r in client.get_model_repository_index()}
            assert index["b"]["state"] == "UNAVAILABLE"
            client.load_model("b")
            x = httpclient.InferInput("x", [2], "FP32")
            x.set_data_from_numpy(np.array([2.0, 4.0], dtype=np.float32))
            np.testing.assert_allclose(client.infer("b", [x]).as_numpy("y"), [3.0, 4.0])
            client.unload_model("a")
            assert not client.is_model_ready("a")
        finally:
            client.close()


def test_load_with_config_override(tmp_path):
    config = ServerConfig(
        model_repository=str(repo(tmp_path)), port=0, model_control_mode="explicit"
    ).validate()
    with ServerThread(config) as s:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{s.port}")
        try:
            override = (
                '{"max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds": 250},'
                ' "instance_group": [{"count": 2, "kind": "KIND_CPU"}]}'
            )
            client.load_model("a", config=override)
            got = client.get_model_config("a")
            assert got["max_batch_size"] == 4
            assert got["dynamic_batching"]["max_queue_delay_microseconds"] == 250
            assert got["instance_group"][0]["count"] == 2
            # A plain load reads the repository's configuration again.
            client.load_model("a")
            got = client.get_model_config("a")
            assert got["max_batch_size"] == 0 and got["instance_group"][0]["count"] == 1
            with pytest.raises(InferenceServerException, match="sequence_batching"):
                client.load_model("a", config='{"sequence_batching": {}}')
        finally:
            client.close()
