"""Our TensorFlow message schemas against the ones TensorFlow itself ships.

tests/fixtures/tensorflow/tf_descriptors.json was dumped from TensorFlow's own ``*_pb2``
modules by make_fixtures.py; every field we declare must carry TF's name, number, type and
repeatedness, so bytes TF writes parse the same with our classes.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from google.protobuf import descriptor_pool

from engine.formats.tensorflow import proto as tfproto
from engine.formats.tensorflow.proto import (
    attr_value_pb2,
    checkpoint_state_pb2,
    full_type_pb2,
    function_pb2,
    graph_pb2,
    meta_graph_pb2,
    node_def_pb2,
    op_def_pb2,
    resource_handle_pb2,
    saved_model_pb2,
    saved_object_graph_pb2,
    saver_pb2,
    struct_pb2,
    tensor_bundle_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    tensor_slice_pb2,
    trackable_object_graph_pb2,
    types_pb2,
    variable_pb2,
    versions_pb2,
)

MODULES = [
    attr_value_pb2,
    checkpoint_state_pb2,
    full_type_pb2,
    function_pb2,
    graph_pb2,
    meta_graph_pb2,
    node_def_pb2,
    op_def_pb2,
    resource_handle_pb2,
    saved_model_pb2,
    saved_object_graph_pb2,
    saver_pb2,
    struct_pb2,
    tensor_bundle_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    tensor_slice_pb2,
    trackable_object_graph_pb2,
    types_pb2,
    variable_pb2,
    versions_pb2,
]
TF = json.loads(
    (pathlib.Path(__file__).parents[2] / "fixtures/tensorflow/tf_descriptors.json").read_text()
)
OURS = "flowserve.tensorflow."


def _messages():
    def walk(path, desc, tf_doc):
        yield path, desc, tf_doc
        for nested in desc.nested_types:
            assert nested.name in tf_doc["nested"], f"{path}.{nested.name} is not TF's"
            yield from walk(f"{path}.{nested.name}", nested, tf_doc["nested"][nested.name])

    for m in MODULES:
        for name, desc in m.DESCRIPTOR.message_types_by_name.items():
            assert name in TF["messages"], f"{name} is not a TensorFlow message"
            yield from walk(name, desc, TF["messages"][name])


MESSAGES = list(_messages())


@pytest.mark.parametrize("path,desc,tf_doc", MESSAGES, ids=[m[0] for m in MESSAGES])
def test_fields_match_tensorflow(path, desc, tf_doc):
    for f in desc.fields:
        tf_field = tf_doc["fields"].get(f.name)
        assert tf_field is not None, f"{path}.{f.name} is not a field of TF's message"
        assert f.number == tf_field["number"], f"{path}.{f.name}"
        assert f.is_repeated == tf_field["repeated"], f"{path}.{f.name}"
        assert f.type == tf_field["type"], f"{path}.{f.name}"
        sub = f.message_type or f.enum_type
        if sub is not None and not sub.full_name.startswith("google.protobuf."):
            assert sub.full_name.removeprefix(OURS) == tf_field["type_name"].removeprefix(
                "tensorflow."
            ), f"{path}.{f.name}"
    for e in desc.enum_types:
        assert {v.name: v.number for v in e.values} == tf_doc["enums"][e.name]


def test_top_level_enums_match_tensorflow():
    for m in MODULES:
        for name, e in m.DESCRIPTOR.enum_types_by_name.items():
            assert {v.name: v.number for v in e.values} == TF["enums"][name], name


def test_messages_read_by_tensorflow_are_complete():
    # The fields a reader needs: leaving one out would silently drop data, not fail.
    for name in ["TensorProto", "AttrValue", "NodeDef", "SignatureDef", "BundleEntryProto"]:
        desc = descriptor_pool.Default().FindMessageTypeByName(OURS + name)
        assert {f.name for f in desc.fields} == set(TF["messages"][name]["fields"]), name


def test_package_and_paths_are_our_own():
    for m in MODULES:
        assert m.DESCRIPTOR.package == "flowserve.tensorflow"
        assert m.DESCRIPTOR.name.startswith("engine/formats/tensorflow/proto/")
    assert tfproto.__name__ == "engine.formats.tensorflow.proto"


def test_wire_round_trip():
    t = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1.5, 2.5])
    t.tensor_shape.dim.add(size=2)
    again = tensor_pb2.TensorProto.FromString(t.SerializeToString())
    assert list(again.float_val) == [1.5, 2.5] and again.tensor_shape.dim[0].size == 2
