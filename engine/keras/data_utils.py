"""``tf.keras.utils.get_file`` for files already in Keras' cache: the path Keras would
download ``fname`` to (``<cache_dir>/<cache_subdir>/<fname>``, ``cache_dir`` defaulting to
``KERAS_HOME`` or ``~/.keras``), its hash checked when one is given, tar and zip archives
extracted as Keras extracts them. The engine never downloads: a file that is not there raises
``FileNotFoundError`` naming where to place it."""

from __future__ import annotations

import hashlib
import os
import tarfile
import zipfile

__all__ = ["get_file", "validate_file"]


def _hasher(algorithm: str, file_hash):
    if algorithm not in ("auto", "sha256", "md5"):
        raise ValueError(f"hash_algorithm must be 'auto', 'sha256' or 'md5', not {algorithm!r}")
    if algorithm == "sha256" or (algorithm == "auto" and len(str(file_hash)) == 64):
        return hashlib.sha256()
    return hashlib.md5()


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=65535) -> bool:
    """Whether the file's sha256 (a 64-digit hash, or ``algorithm='sha256'``) or md5 is
    ``file_hash``."""
    hasher = _hasher(algorithm, file_hash)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest() == str(file_hash)


def _extract(path: str, into: str, archive_format) -> None:
    formats = {"auto": ("tar", "zip"), None: ()}.get(archive_format, archive_format)
    formats = (formats,) if isinstance(formats, str) else tuple(formats)
    for fmt in formats:
        if fmt == "tar" and tarfile.is_tarfile(path):
            with tarfile.open(path) as archive:
                archive.extractall(into, filter="data")  # no links or paths out of `into`
            return
        if fmt == "zip" and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                archive.extractall(into)
            return


def get_file(
    fname=None,
    origin=None,
    untar=False,
    md5_hash=None,
    file_hash=None,
    cache_subdir="datasets",
    hash_algorithm="auto",
    extract=False,
    archive_format="auto",
    cache_dir=None,
) -> str:
    """The cached path of ``fname`` (``untar``: the extracted ``fname``, extracting its
    ``.tar.gz`` when that is not there yet; ``extract``: the archive, extracted beside it)."""
    if not fname:
        fname = os.path.basename(str(origin or "").split("?")[0].rstrip("/"))
        if not fname:
            raise ValueError(
                f"Can't parse the file name from the origin provided: '{origin}'."
                "Please specify the `fname` as the input param."
            )
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    base = cache_dir or os.environ.get("KERAS_HOME") or os.path.join("~", ".keras")
    datadir = os.path.join(os.path.expanduser(str(base)), cache_subdir)
    fname = os.fspath(fname)
    if untar:
        untar_path = os.path.join(datadir, fname.removesuffix(".tar.gz"))
        fpath = untar_path + ".tar.gz"
    else:
        fpath = os.path.join(datadir, fname)
    if not os.path.exists(fpath) and not (untar and os.path.exists(untar_path)):
        raise FileNotFoundError(
            f"get_file: {fpath} is not there. The engine does not download files; place "
            f"the file from {origin} there."
        )
    if file_hash is not None and os.path.exists(fpath):
        if not validate_file(fpath, file_hash, algorithm=hash_algorithm):
            raise ValueError(
                f"get_file: {fpath} does not match the {_hasher(hash_algorithm, file_hash).name} "
                f"hash {file_hash} "
                "(incomplete or outdated); the engine does not download it again"
            )
    if untar:
        if not os.path.exists(untar_path):
            _extract(fpath, datadir, "tar")
        return untar_path
    if extract:
        _extract(fpath, datadir, archive_format)
    return fpath
