"""Hostile model repositories (issue 16, findings 3, 7, 10, 11): a bad config.json or model
directory fails only its model, batching numbers are bounded, a version copied in file by
file is retried when any file under it changes, symlinks out of the repository are refused,
a variable file larger than its index says is refused before reading, loads time out."""

import asyncio
import os
import shutil

import numpy as np
import pytest

from engine import errors as engine_errors
from engine.saving import bundle
from service.config import ConfigError, ServerConfig, load_model_config, parse_model_config
from service.repository import scan_repository
from tests.service import models


def ok_model(root, name="good", version=1):
    models.half_plus_two(root / name / str(version))


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"instances": ' + "9" * 5000 + "}", "cannot read JSON"),
        ('{"batching": {"max_batch_size": ' + "9" * 5000 + "}}", "cannot read JSON"),
        ('{"batching": {"num_batch_threads": 2000000}}', "num_batch_threads must be from 0"),
        ('{"batching": {"batch_timeout_micros": 1000000000000000}}', "batch_timeout_micros"),
        ('{"batching": {"max_enqueued_batches": 0}}', "max_enqueued_batches must be from 1"),
        ('{"version_policy": {"latest": {"num_versions": 100000000000000000000}}}', "num_versions"),
        ('{"version_labels": {"x": 10000000000000000000000}}', "version_labels"),
        ('{"warmup": "yes"}', "warmup"),
        (b"\xff\xfe{}", "cannot read JSON"),
    ],
)
def test_hostile_config_json_is_a_config_error(tmp_path, text, fragment):
    path = tmp_path / "config.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError, match=fragment) as info:
        load_model_config(path)
    assert len(str(info.value)) < 600  # hostile values are not echoed whole


def test_batching_bounds_name_the_setting():
    with pytest.raises(ConfigError, match="num_batch_threads must be from 0 to 1024"):
        parse_model_config({"batching": {"num_batch_threads": 2_000_000}}, "m")
    with pytest.raises(ConfigError, match="batch_timeout_micros must be from 0 to 6e"):
        parse_model_config({"batching": {"batch_timeout_micros": 10**15}}, "m")
    with pytest.raises(ConfigError, match="max_batch_size must be from 1 to 65536"):
        parse_model_config({"batching": {"max_batch_size": 10**9}}, "m")
    config = parse_model_config({"batching": {"num_batch_threads": 8}}, "m")
    assert config.batching == {"num_batch_threads": 8}


@pytest.mark.parametrize(
    "setting, value, fragment",
    [
        ("max_tensor_elements", 0, "max_tensor_elements must be from 1"),
        ("max_connections", 0, "max_connections must be from 1"),
        ("idle_timeout", 0.0, "idle_timeout must be from"),
        ("body_timeout", float("nan"), "body_timeout must be from"),
        ("load_timeout", 1e12, "load_timeout must be from"),
        ("num_threads", 2_000_000, "num_threads must be from 0 to 4096"),
        ("max_inflight_bytes", -1, "max_inflight_bytes must be from 0"),
    ],
)
def test_server_numbers_are_bounded(tmp_path, setting, value, fragment):
    with pytest.raises(ConfigError, match=fragment):
        ServerConfig(model_repository=str(tmp_path), **{setting: value}).validate()


async def test_one_hostile_config_does_not_stop_the_others(tmp_path, manager_for):
    ok_model(tmp_path, "good")
    ok_model(tmp_path, "bad")
    (tmp_path / "bad" / "config.json").write_text("[" * 100_000)
    ok_model(tmp_path, "huge")
    (tmp_path / "huge" / "config.json").write_text('{"instances": ' + "9" * 5000 + "}")
    manager = await manager_for(tmp_path)
    assert manager.resolve("good").version == 1
    (status,) = manager.status("bad")
    assert status.state == "END" and "nested too deeply" in status.error
    (status,) = manager.status("huge")
    assert "cannot read JSON" in status.error
    # Scans keep working: a new version of the good model loads, and the bad one can be
    # fixed and loaded through the repository API.
    ok_model(tmp_path, "good", 2)
    await manager.poll_once()
    assert manager.resolve("good").version == 2
    (tmp_path / "bad" / "config.json").write_text("{}")
    await manager.load_model("bad")
    assert manager.resolve("bad").version == 1


def test_an_unreadable_model_directory_fails_alone(tmp_path, monkeypatch):
    ok_model(tmp_path, "good")
    ok_model(tmp_path, "broken")
    from service import repository

    real = repository._scan_model

    def flaky(entry, *args):
        if entry.name == "broken":
            raise RecursionError("maximum recursion depth exceeded")
        return real(entry, *args)

    monkeypatch.setattr(repository, "_scan_model", flaky)
    sources = scan_repository(tmp_path)
    assert sources["good"].config_error is None and 1 in sources["good"].versions
    assert "maximum recursion depth" in sources["broken"].config_error


async def test_a_version_copied_in_file_by_file_is_retried(tmp_path, manager_for):
    staging = tmp_path / "staging"
    models.half_plus_two(staging, b=7.0)
    repo = tmp_path / "repo"
    version = repo / "m" / "1"
    version.mkdir(parents=True)
    # The model file lands first, the variables later (a plain `cp -r`, not a rename).
    shutil.copy(staging / "saved_model.msgpack", version / "saved_model.msgpack")
    manager = await manager_for(repo)
    (status,) = manager.status("m")
    assert status.state == "END" and "bundle index" in status.error
    await manager.poll_once()  # nothing changed: not retried
    assert manager.status("m")[0].error == status.error
    shutil.copytree(staging / "variables", version / "variables")
    await manager.poll_once()
    result = await manager.infer("m", {"x": np.array([2.0], np.float32)})
    assert result.outputs["y"].tolist() == [8.0]


async def test_symlinks_out_of_the_repository_are_refused(tmp_path, manager_for):
    outside = tmp_path / "outside"
    models.half_plus_two(outside / "1")
    repo = tmp_path / "repo"
    (repo / "linked").mkdir(parents=True)
    os.symlink(outside / "1", repo / "linked" / "1")
    ok_model(repo, "inner")
    # A version whose variables point outside, inside a real directory.
    models.half_plus_two(repo / "partly" / "1")
    shutil.rmtree(repo / "partly" / "1" / "variables")
    os.symlink(outside / "1" / "variables", repo / "partly" / "1" / "variables")
    # A symlink that stays inside the repository is fine.
    os.symlink(repo / "inner" / "1", repo / "alias_target")
    (repo / "alias").mkdir()
    os.symlink(repo / "inner" / "1", repo / "alias" / "1")

    manager = await manager_for(repo)
    for name in ("linked", "partly"):
        (status,) = manager.status(name)
        assert status.state == "END", name
        assert "outside the model repository" in status.error and "--follow-symlinks" in (
            status.error
        )
    assert manager.resolve("alias").version == 1
    assert manager.resolve("inner").version == 1

    followed = await manager_for(repo, follow_symlinks=True)
    assert followed.resolve("linked").version == 1
    assert followed.resolve("partly").version == 1


def test_a_variable_file_larger_than_its_index_is_refused_before_reading(tmp_path):
    models.half_plus_two(tmp_path / "1")
    data = tmp_path / "1" / "variables" / "variables.data-00000-of-00001"
    size = data.stat().st_size
    with open(data, "r+b") as f:
        f.truncate(3 << 30)  # a 3 GiB sparse file: no disk used, never read
    with pytest.raises(engine_errors.DataLossError, match="larger than its index declares"):
        bundle.read_bundle(str(tmp_path / "1" / "variables" / "variables"))
    with open(data, "r+b") as f:
        f.truncate(size - 1)
    with pytest.raises(engine_errors.DataLossError, match="truncated"):
        bundle.read_bundle(str(tmp_path / "1" / "variables" / "variables"))


async def test_a_load_past_load_timeout_fails_and_its_warmup_is_stopped(tmp_path, manager_for):
    models.slow(tmp_path / "slow" / "1", iterations=10**9)  # warmup runs the loop: endless
    ok_model(tmp_path, "good")
    manager = await manager_for(tmp_path, load_timeout=0.3)
    (status,) = manager.status("slow")
    assert status.state == "END" and "load_timeout (0.3s)" in status.error
    assert manager.resolve("good").version == 1
    # The warmup's run is cancelled at its next loop iteration: its thread comes back.
    for _ in range(200):
        if not manager.stuck_loads:
            break
        await asyncio.sleep(0.05)
    assert manager.stuck_loads == 0
    assert manager.status("slow")[0].error == status.error


def test_versions_may_have_leading_zeros_but_not_two_spellings(tmp_path):
    """TF Serving reads 00000123 as version 123 (its own test models live there); 123 and
    0123 together are one version twice, refused with the reason."""
    from service.repository import parse_version, scan_repository

    assert parse_version("00000123") == 123
    assert parse_version("0") is None and parse_version("000") is None
    assert parse_version("١٢") is None  # digits outside ASCII are not versions
    for name in ("a/00000123", "b/7", "b/0007"):
        (tmp_path / name).mkdir(parents=True)
    models = scan_repository(tmp_path)
    assert list(models["a"].versions) == [123]
    assert models["b"].versions[7].name == "0007"
    assert models["b"].refused[7] == "directories 0007 and 7 both hold version 7"
