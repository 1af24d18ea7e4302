"""Triton's config.pbtxt, read where a model has no config.json."""

import pytest

from service.config import ConfigError
from service.repository import scan_repository
from service.triton_config import parse_triton_config
from tests.service import models

SIMPLE = """
name: "simple"
platform: "tensorflow_savedmodel"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] format: FORMAT_NONE }
]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 100 }
instance_group [ { count: 2 kind: KIND_CPU } ]
version_policy: { specific { versions: [ 1, 3 ] } }
"""


def test_config_pbtxt_maps_to_settings(tmp_path):
    path = tmp_path / "config.pbtxt"
    path.write_text(SIMPLE)
    assert parse_triton_config(path, "simple") == {
        "batching": {"enabled": True, "max_batch_size": 8, "batch_timeout_micros": 100},
        "instances": 2,
        "device": "cpu",
        "version_policy": {"specific": {"versions": [1, 3]}},
    }
    path.write_text("max_batch_size: 0 instance_group { kind: KIND_GPU gpus: [1] }")
    assert parse_triton_config(path, "m") == {
        "batching": {"enabled": False},
        "instances": 1,
        "device": "gpu:1",
    }
    path.write_text("version_policy { latest { num_versions: 2 } }")
    assert parse_triton_config(path, "m")["version_policy"] == {"latest": {"num_versions": 2}}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ('name: "other"', "does not match"),
        ('platform: "pytorch_libtorch"', "pytorch_libtorch"),
        ('backend: "python"', "'python' is not supported"),
        ("optimization { priority: PRIORITY_MAX }", "optimization"),
        ("sequence_batching { }", "sequence_batching"),
        ('parameters { key: "k" value { string_value: "v" } }', "parameters"),
        ("dynamic_batching { }", "max_batch_size > 0"),
        ("instance_group [ { kind: KIND_CPU }, { kind: KIND_CPU } ]", "one instance_group"),
        ("max_batch_size: 8 junk", "junk"),
    ],
)
def test_unsupported_fields_are_clear_errors(tmp_path, text, fragment):
    path = tmp_path / "config.pbtxt"
    path.write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        parse_triton_config(path, "simple")


def test_repository_reads_config_pbtxt(tmp_path):
    models.half_plus_two(tmp_path / "simple" / "1")
    models.half_plus_two(tmp_path / "simple" / "2")
    models.half_plus_two(tmp_path / "simple" / "3")
    (tmp_path / "simple" / "config.pbtxt").write_text(SIMPLE)
    models.half_plus_two(tmp_path / "both" / "1")
    models.write_config(tmp_path / "both", {"instances": 3})
    (tmp_path / "both" / "config.pbtxt").write_text("this is ignored")
    (tmp_path / "bad" / "1").mkdir(parents=True)
    (tmp_path / "bad" / "config.pbtxt").write_text('backend: "python"')
    sources = scan_repository(tmp_path)
    simple = sources["simple"].config
    assert simple.instances == 2 and simple.version_policy.versions == (1, 3)
    assert simple.batching["max_batch_size"] == 8
    assert simple.version_policy.select([1, 2, 3]) == {1, 3}
    assert sources["both"].config.instances == 3  # config.json wins
    assert "python" in sources["bad"].config_error
