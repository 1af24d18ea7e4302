"""Rebuilds every bundled example model into a model repository.

::

    python models/build.py [--repository DIR] [--only NAME ...]

The repository defaults to this ``models/`` directory (the one the server serves by default).
Each model is exported into a hidden staging directory inside its model directory, loaded
back as a check, and only then swapped in for ``<model>/<version>/``; the previous version
directory is deleted after the swap (and put back if the swap fails). Exports refuse to write
into non-empty directories, so this is the way to replace a bundled version. The models are
seeded, so a rebuild gives an equivalent model (same graph and signatures; digits' accuracy
equal up to floating-point noise).

A running server keeps serving the version it already loaded; restart it (or export under a
new version number) to serve a rebuilt one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``models`` and ``engine`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine as tf  # noqa: E402
from models import digits, digits_cnn, half_plus_two  # noqa: E402

MODELS = {m.NAME: m for m in (half_plus_two, digits, digits_cnn)}
DEFAULT_REPOSITORY = Path(__file__).resolve().parent


def _check_export(export_dir: Path) -> list[str]:
    """Loads the export in a fresh graph (as the server would); returns its signature keys."""
    graph = tf.Graph()
    with tf.Session(graph=graph) as sess:
        meta = tf.saved_model.load(sess, [tf.saved_model.SERVING], str(export_dir))
    return sorted(meta.signature_def)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _make_readable(path: Path) -> None:
    """Temporary directories and files are created private (0700/0600); a model repository
    is read by the server, maybe as another user (the Docker image runs as one): give the
    export the modes ordinary files get (0755 directories, 0644 files under umask 022)."""
    mask = _umask()
    for p in [path, *path.rglob("*")]:
        p.chmod((0o777 if p.is_dir() else 0o666) & ~mask)


def _swap_in(staged: Path, target: Path) -> None:
    """Puts ``staged`` at ``target``, replacing (and then deleting) what was there."""
    if not target.exists():
        os.rename(staged, target)
        return
    old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
    os.rename(target, old)
    try:
        os.rename(staged, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _write_config(model_dir: Path, config: dict) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".config.json.", dir=model_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, model_dir / "config.json")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def rebuild(name: str, repository: Path) -> dict:
    """Exports model ``name`` into ``repository/<name>/<version>/``, replacing it if present;
    returns what the model's export reported (e.g. accuracy)."""
    module = MODELS[name]
    model_dir = Path(repository) / name
    model_dir.mkdir(parents=True, exist_ok=True)
    # Hidden names: a repository scanner never mistakes the staging directory for a version.
    staging = Path(tempfile.mkdtemp(prefix=f".{module.VERSION}.build-", dir=model_dir))
    try:
        report = module.export(str(staging))
        report["signatures"] = _check_export(staging)
        _make_readable(staging)
        _swap_in(staging, model_dir / str(module.VERSION))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if module.CONFIG is not None:
        _write_config(model_dir, module.CONFIG)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Rebuild the bundled example models.")
    parser.add_argument(
        "--repository",
        type=Path,
        default=DEFAULT_REPOSITORY,
        help=f"model repository to export into (default: {DEFAULT_REPOSITORY})",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(MODELS),
        metavar="NAME",
        help=f"rebuild only this model (repeatable; one of {sorted(MODELS)})",
    )
    args = parser.parse_args(argv)
    args.repository.mkdir(parents=True, exist_ok=True)
    for name in args.only or list(MODELS):
        start = time.perf_counter()
        report = rebuild(name, args.repository)
        target = args.repository / name / str(MODELS[name].VERSION)
        print(
            f"{name}: exported {target} in {time.perf_counter() - start:.1f} s  "
            f"{json.dumps(report)}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
