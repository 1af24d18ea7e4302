"""The model repository on disk: ``<repo>/<model>/<version>/`` plus ``<model>/config.json``.

A directory is a model when its name is valid and it holds at least one version directory
(a positive integer; leading zeros allowed, two spellings of one version refused) or a
``config.json`` (or Triton's ``config.pbtxt``, read where there is no ``config.json``:
``service.triton_config``); anything else (scripts, data, hidden entries) is ignored.
Every version directory is a version: one holding a model the server reads (the engine's
``saved_model.msgpack``, TensorFlow's ``saved_model.pb``, ``model.onnx``, TF Serving's
``model.tflite``) is loaded as it is, and one holding none shows as a failed version with
the reason, never silently skipped.
A version copied in file by file may be read before it is complete, so each version has a
*stamp* (the names, sizes and modification times of every file under it): a version that
failed to load is retried when its stamp changes. Symlinks that lead out of the repository
are refused (the version fails with the reason) unless ``follow_symlinks`` is set. A model
whose directory or ``config.json`` cannot be read fails alone, with the reason; the others
are unaffected.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from service.config import ConfigError, ModelConfig, load_model_config, parse_model_config
from service.triton_config import TRITON_CONFIG, parse_triton_config

__all__ = ["ModelSource", "scan_repository", "valid_model_name", "parse_version"]

log = logging.getLogger("flowserve.repository")

_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_MAX_FILES = 10_000  # files looked at per version for its stamp


def valid_model_name(name: str) -> bool:
    """Model names: letters, digits, ``_ . -``; no separators, no ``..``, at most 128."""
    return bool(_MODEL_NAME.match(name)) and ".." not in name


def parse_version(text: str) -> int | None:
    """A version path segment as a positive integer, or None if it is not one. Leading
    zeros are allowed, as TF Serving allows them (its own test models live in
    ``00000123``)."""
    if not text.isascii() or not text.isdigit() or len(text) > 18 or int(text) == 0:
        return None
    return int(text)


@dataclass
class ModelSource:
    name: str
    path: Path
    versions: dict[int, Path] = field(default_factory=dict)
    config: ModelConfig = field(default_factory=ModelConfig)
    config_error: str | None = None
    # Per version: its stamp (changes when any file under it does) and, when it must not be
    # loaded, why (e.g. a symlink out of the repository).
    stamps: dict[int, str] = field(default_factory=dict)
    refused: dict[int, str] = field(default_factory=dict)


def scan_repository(root: str | Path, follow_symlinks: bool = False) -> dict[str, ModelSource]:
    """Every model found under ``root`` with its ready versions and parsed config."""
    root = Path(root)
    models: dict[str, ModelSource] = {}
    try:
        entries = sorted(root.iterdir())
        real_root = root.resolve()
    except (OSError, RuntimeError) as e:
        log.error("cannot list model repository %s: %s", root, e)
        return models
    for entry in entries:
        name = entry.name
        try:
            if name.startswith((".", "_")) or not entry.is_dir():
                continue
            if not valid_model_name(name):
                log.warning("ignoring %s: not a valid model name", entry)
                continue
            source = _scan_model(entry, real_root, follow_symlinks)
        except Exception as e:  # noqa: BLE001 - one unreadable model must not stop the scan
            log.warning("model directory %s cannot be read: %s", entry, e)
            source = ModelSource(name, entry, config_error=f"cannot read {entry}: {e}")
        if source is not None:
            models[name] = source
    return models


def _scan_model(entry: Path, real_root: Path, follow_symlinks: bool) -> ModelSource | None:
    versions = {}
    clashes = {}
    children = sorted(entry.iterdir())
    for child in children:
        v = parse_version(child.name)
        if v is not None and child.is_dir():
            if v in versions:  # e.g. 123 and 00000123
                clashes[v] = (
                    f"directories {versions[v].name} and {child.name} both hold version {v}"
                )
                continue
            versions[v] = child
    has_config = (entry / "config.json").is_file()
    triton = not has_config and (entry / TRITON_CONFIG).is_file()
    if not versions and not (has_config or triton):
        if not any(parse_version(c.name) is not None for c in children):
            return None  # not a model (e.g. scripts or data)
    source = ModelSource(entry.name, entry, versions)
    outside = None if follow_symlinks else _escapes(entry, real_root)
    try:
        if outside:
            raise ConfigError(outside)
        if not follow_symlinks and (entry / "config.json").is_symlink():
            reason = _escapes(entry / "config.json", real_root)
            if reason:
                raise ConfigError(reason)
        if triton:  # Triton's config.pbtxt, read where there is no config.json
            path = entry / TRITON_CONFIG
            source.config = parse_model_config(parse_triton_config(path, entry.name), str(path))
        else:
            source.config = load_model_config(entry / "config.json")
    except ConfigError as e:
        source.config_error = str(e)
    for v, path in versions.items():
        stamp, reason = version_stamp(path, real_root, follow_symlinks)
        source.stamps[v] = stamp
        if reason or outside or v in clashes:
            source.refused[v] = reason or outside or clashes[v]
    return source


def _escapes(path: Path, real_root: Path) -> str | None:
    """Why ``path`` may not be served (it resolves outside ``real_root``), or None."""
    if not path.is_symlink():
        return None
    target = path.resolve()
    if target == real_root or real_root in target.parents:
        return None
    return (
        f"{path} is a symlink to {target}, outside the model repository "
        "(start the server with --follow-symlinks to serve it)"
    )


def version_stamp(
    path: Path, real_root: Path | None = None, follow_symlinks: bool = True
) -> tuple[str, str | None]:
    """A digest of the names, sizes and modification times of every file under ``path``
    (at most 10,000), and why the version must not be loaded (a symlink leading out of
    ``real_root`` when ``follow_symlinks`` is off), or None."""
    digest = hashlib.blake2b(digest_size=16)
    reason = None
    if real_root is not None and not follow_symlinks:
        reason = _escapes(path, real_root)
    count = 0
    for directory, dirs, files in os.walk(path, followlinks=follow_symlinks):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            count += 1
            if count > _MAX_FILES:
                return digest.hexdigest(), f"{path} holds more than {_MAX_FILES} files"
            full = Path(directory, name)
            try:
                st = full.stat() if follow_symlinks else full.lstat()
            except OSError:
                continue  # a dangling link or a file removed meanwhile: not a stamp change
            digest.update(f"{full}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "replace"))
            if reason is None and real_root is not None and not follow_symlinks:
                reason = _escapes(full, real_root)
    return digest.hexdigest(), reason
