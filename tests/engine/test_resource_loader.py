"""``tf.resource_loader``: paths relative to the calling script and the engine's root."""

from __future__ import annotations

import os

import pytest

import engine as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def test_paths_are_relative_to_the_caller():
    assert tf.resource_loader.get_data_files_path() == HERE
    assert tf.resource_loader.get_path_to_datafile("lookup_vocab.txt") == os.path.join(
        HERE, "lookup_vocab.txt"
    )
    assert tf.resource_loader.readahead_file_path("/x/y") == "/x/y"


def test_load_resource_reads_from_the_engine_root():
    root = tf.resource_loader.get_root_dir_with_all_resources()
    assert root == os.path.dirname(os.path.abspath(tf.__file__))
    with open(os.path.join(root, "version.py"), "rb") as f:
        assert tf.resource_loader.load_resource("version.py") == f.read()
    with pytest.raises(FileNotFoundError):
        tf.resource_loader.load_resource("no/such/file")
