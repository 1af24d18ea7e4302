"""The serving core without HTTP: lifecycle, version policies, labels, swaps, inference."""

import asyncio
import shutil

import numpy as np
import pytest

from service.errors import DeadlineExceeded, InvalidInput, NotFound, Unavailable
from service.servable import VersionState
from tests.service import models


def states(m, name):
    return {s.version: s.state for s in m.status(name)}


async def test_latest_policy_serves_newest_and_swaps_when_a_version_appears(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1", b=2.0)
    m = await manager_for(tmp_path)
    assert states(m, "hpt") == {1: "AVAILABLE"}
    r = await m.infer("hpt", {"x": np.array([2.0])})
    assert r.version == 1 and r.outputs["y"].tolist() == [3.0]
    models.half_plus_two(tmp_path / "hpt" / "2", b=10.0)
    await m.poll_once()
    assert states(m, "hpt") == {2: "AVAILABLE"}  # v1 retired once v2 was available
    r = await m.infer("hpt", {"x": np.array([2.0])})
    assert r.version == 2 and r.outputs["y"].tolist() == [11.0]
    with pytest.raises(NotFound, match="version 1"):
        await m.infer("hpt", {"x": np.array([2.0])}, version=1)


async def test_all_and_specific_policies_and_labels(tmp_path, manager_for):
    for v in (1, 2, 3):
        models.half_plus_two(tmp_path / "hpt" / str(v), b=float(v))
    models.write_config(
        tmp_path / "hpt",
        {
            "version_policy": {"specific": {"versions": [1, 3]}},
            "version_labels": {"stable": 1, "canary": 3},
        },
    )
    m = await manager_for(tmp_path)
    assert states(m, "hpt") == {1: "AVAILABLE", 3: "AVAILABLE"}
    assert (await m.infer("hpt", {"x": np.array([0.0])})).version == 3
    assert (await m.infer("hpt", {"x": np.array([0.0])}, label="stable")).version == 1
    assert (await m.infer("hpt", {"x": np.array([0.0])}, version="3")).outputs["y"][0] == 3.0
    with pytest.raises(NotFound, match="label 'beta'"):
        await m.infer("hpt", {"x": np.array([0.0])}, label="beta")
    with pytest.raises(InvalidInput, match="not both"):
        await m.infer("hpt", {"x": np.array([0.0])}, version=1, label="stable")
    models.write_config(tmp_path / "hpt", {"version_policy": {"all": {}}})
    await m.poll_once()
    assert states(m, "hpt") == {1: "AVAILABLE", 2: "AVAILABLE", 3: "AVAILABLE"}
    models.write_config(tmp_path / "hpt", {"version_policy": {"latest": {"num_versions": 2}}})
    await m.poll_once()
    assert states(m, "hpt") == {2: "AVAILABLE", 3: "AVAILABLE"}


async def test_failed_version_is_reported_and_does_not_disturb_serving(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    m = await manager_for(tmp_path)
    bad = tmp_path / "hpt" / "2"
    bad.mkdir()
    (bad / "saved_model.msgpack").write_bytes(b"\x93not a model")
    await m.poll_once()
    st = {s.version: s for s in m.status("hpt")}
    assert st[2].state == "END" and "saved_model.msgpack" in st[2].error
    assert st[1].state == "AVAILABLE"  # v1 keeps serving: the replacement never came up
    assert (await m.infer("hpt", {"x": np.array([1.0])})).version == 1
    with pytest.raises(Unavailable, match="version 2 is not available.*END"):
        await m.infer("hpt", {"x": np.array([1.0])}, version=2)
    # fixing the files retries the load
    shutil.rmtree(bad)
    models.half_plus_two(bad, b=7.0)
    await m.poll_once()
    assert states(m, "hpt") == {2: "AVAILABLE"}


@pytest.mark.parametrize("batching", [False, True])
async def test_state_changing_signature_is_served_one_request_at_a_time(
    tmp_path, manager_for, batching
):
    """A signature that changes variables (TF Serving's counter model) is served as TF
    Serving serves it: every request updates the one state, none is lost to a merged batch
    or to a second instance, and concurrent requests never race."""
    models.stateful(tmp_path / "counter" / "1")
    models.write_config(tmp_path / "counter", {"instances": 2})
    m = await manager_for(tmp_path, enable_batching=batching, inline_compute_micros=1_000_000)
    (status,) = m.status("counter")
    assert status.state == "AVAILABLE"
    r = await m.infer("counter", {"x": np.array([1.0, 2.0])})
    assert r.outputs["y"].tolist() == 3.0
    rs = await asyncio.gather(*(m.infer("counter", {"x": np.array([1.0])}) for _ in range(40)))
    # each request ran alone: each saw its own increment (a merged batch would share one)
    assert sorted(float(r.outputs["y"]) for r in rs) == [float(v) for v in range(4, 44)]
    r = await m.infer("counter", {"x": np.array([0.0])})
    assert r.outputs["y"].tolist() == 43.0


async def test_bad_config_is_reported_and_keeps_the_loaded_versions(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    models.write_config(tmp_path / "bad", {"version_policy": {"newest": 1}})
    models.half_plus_two(tmp_path / "bad" / "1")
    m = await manager_for(tmp_path)
    with pytest.raises(Unavailable, match="unknown version policy 'newest'"):
        await m.infer("bad", {"x": np.array([1.0])})
    (tmp_path / "hpt" / "config.json").write_text("{not json")
    await m.poll_once()
    assert (await m.infer("hpt", {"x": np.array([1.0])})).version == 1


async def test_removed_model_is_unloaded(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "a" / "1")
    models.half_plus_two(tmp_path / "b" / "1")
    m = await manager_for(tmp_path)
    assert m.model_names() == ["a", "b"]
    shutil.rmtree(tmp_path / "b")
    await m.poll_once()
    assert m.model_names() == ["a"]
    with pytest.raises(NotFound):
        await m.infer("b", {"x": np.array([1.0])})


async def test_invalid_names_never_reach_the_filesystem(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    m = await manager_for(tmp_path)
    for name in ["../hpt", "hpt/1", "..", ".hidden", "a" * 200]:
        with pytest.raises(NotFound):
            await m.infer(name, {"x": np.array([1.0])})
    for version in ["../1", "0", "-1", "00", "1.0", "+1", " 1"]:
        with pytest.raises(NotFound):
            await m.infer("hpt", {"x": np.array([1.0])}, version=version)
    # leading zeros name the same version, as TF Serving's version paths do
    r = await m.infer("hpt", {"x": np.array([1.0])}, version="01")
    assert r.version == 1


async def test_inputs_are_validated_with_safe_casts(repository, manager_for):
    m = await manager_for(repository)
    r = await m.infer("multi_io", {"a": np.array([[1, 2, 3]]), "b": np.array([1.0])})
    assert r.outputs["total"].tolist() == [7.0] and r.outputs["doubled"].dtype == np.int32
    with pytest.raises(InvalidInput, match="non-integral"):
        await m.infer("multi_io", {"a": np.ones((1, 3)), "b": np.array([1.5])})
    with pytest.raises(InvalidInput, match="out of range for int32"):
        await m.infer("multi_io", {"a": np.ones((1, 3)), "b": np.array([2**40])})
    with pytest.raises(InvalidInput, match=r"missing input\(s\) \['b'\]"):
        await m.infer("multi_io", {"a": np.ones((1, 3))})
    with pytest.raises(InvalidInput, match=r"unknown input\(s\) \['c'\]"):
        await m.infer("multi_io", {"a": np.ones((1, 3)), "b": np.array([1]), "c": np.ones(1)})
    with pytest.raises(InvalidInput, match="expects strings"):
        await m.infer("strings", {"text": np.array([1.0])})
    with pytest.raises(InvalidInput, match="rank"):
        await m.infer("half_plus_two", {"x": np.ones((2, 2))})
    r = await m.infer("multi_io", {"a": np.ones((2, 3))}, signature="negate")
    assert r.outputs["neg"].tolist() == [[-1.0] * 3] * 2
    r = await m.infer("multi_io", {"a": np.ones((1, 3)), "b": np.array([1])}, outputs=["label"])
    assert list(r.outputs) == ["label"] and r.outputs["label"].tolist() == [b"pos"]
    with pytest.raises(InvalidInput, match="unknown output"):
        await m.infer("multi_io", {"a": np.ones((1, 3)), "b": np.array([1])}, outputs=["x"])
    with pytest.raises(NotFound, match="signature 'nope'"):
        await m.infer("multi_io", {"a": np.ones((1, 3))}, signature="nope")


async def test_requests_never_add_ops(repository, manager_for):
    m = await manager_for(repository)
    s = m.resolve("multi_io")
    n_ops = len(s.graph.get_operations())
    assert s.graph.finalized
    for i in range(50):
        await m.infer("multi_io", {"a": np.full((i % 5 + 1, 3), i), "b": np.arange(i % 5 + 1)})
    assert len(s.graph.get_operations()) == n_ops


async def test_deadline_exceeded_and_concurrent_requests(tmp_path, manager_for):
    models.slow(tmp_path / "slow" / "1", iterations=400_000)
    models.half_plus_two(tmp_path / "hpt" / "1")
    m = await manager_for(tmp_path, num_threads=2)
    with pytest.raises(DeadlineExceeded):
        await m.infer("slow", {"x": np.array([1.0])}, timeout=0.05)
    results = await asyncio.gather(
        *(m.infer("hpt", {"x": np.array([float(i)])}) for i in range(20))
    )
    assert [r.outputs["y"][0] for r in results] == [0.5 * i + 2 for i in range(20)]
    with pytest.raises(InvalidInput, match="timeout must be positive"):
        await m.infer("hpt", {"x": np.array([1.0])}, timeout=0)


async def test_warmup_requests_from_config(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "ok" / "1")
    models.write_config(tmp_path / "ok", {"warmup": [{"inputs": {"x": [1.0, 2.0]}}]})
    models.half_plus_two(tmp_path / "bad" / "1")
    models.write_config(tmp_path / "bad", {"warmup": [{"inputs": {"x": [[1.0]]}}]})
    m = await manager_for(tmp_path)
    assert states(m, "ok") == {1: "AVAILABLE"}
    (st,) = m.status("bad")
    assert st.state == "END" and "warmup request 0 failed" in st.error


async def test_repository_index_load_and_unload(tmp_path, manager_for):
    models.half_plus_two(tmp_path / "hpt" / "1")
    m = await manager_for(tmp_path)
    await m.unload_model("hpt")
    with pytest.raises(Unavailable, match="was unloaded; load it again"):
        await m.infer("hpt", {"x": np.array([1.0])})
    assert [(s.model, s.state) for s in m.index()] == [("hpt", "UNLOADED")]
    await m.poll_once()  # an unloaded model stays unloaded until loaded explicitly
    assert [(s.model, s.state) for s in m.index()] == [("hpt", "UNLOADED")]
    await m.load_model("hpt")
    assert (await m.infer("hpt", {"x": np.array([1.0])})).version == 1
    with pytest.raises(NotFound, match="no such model"):
        await m.load_model("ghost")


async def test_infer_runs_on_the_servable_the_caller_resolved(tmp_path, manager_for):
    for v, b in ((1, 1.0), (2, 2.0)):
        models.half_plus_two(tmp_path / "hpt" / str(v), b=b)
    models.write_config(tmp_path / "hpt", {"version_policy": {"all": {}}})
    m = await manager_for(tmp_path)
    calls = []
    resolve = m.resolve
    m.resolve = lambda *args: calls.append(args) or resolve(*args)
    s1 = resolve("hpt", 1)
    # No version named: without the handle this would resolve to the latest (2).
    r = await m.infer("hpt", {"x": np.array([2.0])}, servable=s1)
    assert r.version == 1 and r.outputs["y"].tolist() == [2.0]
    assert calls == []  # the handle is used as is, not looked up again


async def test_a_retired_handle_for_the_latest_version_runs_on_its_successor(tmp_path, manager_for):
    for v, b in ((1, 1.0), (2, 2.0)):
        models.half_plus_two(tmp_path / "hpt" / str(v), b=b)
    models.write_config(tmp_path / "hpt", {"version_policy": {"all": {}}})
    m = await manager_for(tmp_path)
    s2 = m.resolve("hpt")
    assert s2.version == 2
    s2.state = VersionState.UNLOADING  # retired between the caller's lookup and the run
    try:
        r = await m.infer("hpt", {"x": np.array([2.0])}, servable=s2)
        assert r.version == 1 and r.outputs["y"].tolist() == [2.0]
        # A pinned version that is gone is an error, handle or not.
        with pytest.raises(Unavailable, match="version 2 is UNLOADING"):
            await m.infer("hpt", {"x": np.array([2.0])}, version=2, servable=s2)
    finally:
        s2.state = VersionState.AVAILABLE
