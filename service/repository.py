"""The model repository on disk: ``<repo>/<model>/<version>/`` plus ``<model>/config.json``.

A directory is a model when its name is valid and it holds at least one version directory
(a positive integer) or a ``config.json``; anything else (scripts, data, hidden entries) is
ignored. A version is ready once its ``saved_model.msgpack`` (or an ONNX ``model.onnx``)
exists: exports are renamed into place whole, so a version never appears half-written.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from service.config import ConfigError, ModelConfig, load_model_config

__all__ = ["ModelSource", "scan_repository", "valid_model_name", "parse_version"]

log = logging.getLogger("flowserve.repository")

_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
MODEL_FILES = ("saved_model.msgpack", "model.onnx")  # what makes a version directory


def valid_model_name(name: str) -> bool:
    """Model names: letters, digits, ``_ . -``; no separators, no ``..``, at most 128."""
    return bool(_MODEL_NAME.match(name)) and ".." not in name


def parse_version(text: str) -> int | None:
    """A version path segment as a positive integer, or None if it is not one."""
    if not text.isdigit() or len(text) > 18 or text.startswith("0"):
        return None
    return int(text)


@dataclass
class ModelSource:
    name: str
    path: Path
    versions: dict[int, Path] = field(default_factory=dict)
    config: ModelConfig = field(default_factory=ModelConfig)
    config_error: str | None = None


def scan_repository(root: str | Path) -> dict[str, ModelSource]:
    """Every model found under ``root`` with its ready versions and parsed config."""
    root = Path(root)
    models: dict[str, ModelSource] = {}
    try:
        entries = sorted(root.iterdir())
    except OSError as e:
        log.error("cannot list model repository %s: %s", root, e)
        return models
    for entry in entries:
        name = entry.name
        if name.startswith((".", "_")) or not entry.is_dir():
            continue
        if not valid_model_name(name):
            log.warning("ignoring %s: not a valid model name", entry)
            continue
        versions = {}
        try:
            children = list(entry.iterdir())
        except OSError as e:
            log.warning("cannot list model directory %s: %s", entry, e)
            continue
        for child in children:
            v = parse_version(child.name)
            if v is not None and child.is_dir() and any((child / f).is_file() for f in MODEL_FILES):
                versions[v] = child
        has_config = (entry / "config.json").is_file()
        if not versions and not has_config:
            if not any(parse_version(c.name) is not None for c in children):
                continue  # not a model (e.g. scripts or data)
        source = ModelSource(name, entry, versions)
        try:
            source.config = load_model_config(entry / "config.json")
        except ConfigError as e:
            source.config_error = str(e)
        models[name] = source
    return models
