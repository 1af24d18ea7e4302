"""``tf.gfile`` (TF1's CamelCase names) and ``tf.io.gfile`` (TF 1.14+'s snake_case names):
file access over the local filesystem, raising TF's error types.

A missing file is ``tf.errors.NotFoundError``, a ``copy``/``rename`` onto an existing file
without ``overwrite`` is ``AlreadyExistsError``, a directory where a file is expected is
``FailedPreconditionError``, and reading a file opened for writing (or the reverse) is
``PermissionDeniedError`` — as TF's local filesystem reports them::

    with tf.gfile.GFile("/tmp/x.txt", "w") as f:
        f.write("hello\\n")
    tf.io.gfile.exists("/tmp/x.txt")   # True
"""

from __future__ import annotations

import errno
import glob as _glob
import os
import shutil
from collections.abc import Iterator

from engine import errors
from engine.util.namespaces import Namespace, namespace

__all__ = [
    "GFile",
    "FastGFile",
    "FileStatistics",
    "exists",
    "makedirs",
    "mkdir",
    "glob",
    "isdir",
    "listdir",
    "remove",
    "rmtree",
    "rename",
    "copy",
    "stat",
    "walk",
    "join",
    "camel_case_namespace",
    "snake_case_namespace",
]

_MODES = ("r", "rb", "w", "wb", "a", "ab", "r+", "rb+", "w+", "wb+", "a+", "ab+")


def _os_error(path, e: OSError) -> errors.OpError:
    """TF's error type for an OS error on ``path``, with TF's "path; reason" message."""
    kind = {
        errno.ENOENT: errors.NotFoundError,
        errno.EEXIST: errors.AlreadyExistsError,
        errno.EACCES: errors.PermissionDeniedError,
        errno.EPERM: errors.PermissionDeniedError,
        errno.EISDIR: errors.FailedPreconditionError,
        errno.ENOTDIR: errors.FailedPreconditionError,
        errno.ENOTEMPTY: errors.FailedPreconditionError,
    }.get(e.errno, errors.UnknownError)
    return kind(None, None, f"{os.fsdecode(path)}; {e.strerror}")


class GFile:
    """A file, opened lazily on first use, as TF's ``GFile``.

    Modes ``r``/``w``/``a`` hand back ``str``, with ``b`` ``bytes``; ``write`` accepts either.
    ``read(n)``, ``readline``, ``readlines``, iteration, ``seek(offset, whence)``, ``tell``,
    ``size``, ``flush``, ``close`` and ``with`` work as on a Python file.
    """

    def __init__(self, name, mode: str = "r"):
        if mode.replace("+", "").replace("b", "") not in ("r", "w", "a") or mode not in _MODES:
            raise errors.InvalidArgumentError(
                None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'"
            )
        self._name, self._mode = os.fspath(name), mode
        self._binary = "b" in mode
        self._readable = mode.startswith("r") or "+" in mode
        self._writable = not mode.startswith("r") or "+" in mode
        self._file = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def mode(self) -> str:
        return self._mode

    def _handle(self):
        if self._file is None:
            mode = self._mode.replace("b", "") + "b"
            try:
                self._file = open(self._name, mode)  # noqa: SIM115 - closed by close()/__exit__
            except OSError as e:
                raise _os_error(self._name, e) from None
        return self._file

    def _for_reading(self):
        if not self._readable:
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        return self._handle()

    def _decode(self, data: bytes):
        return data if self._binary else data.decode("utf-8")

    def read(self, n: int = -1):
        """Reads ``n`` bytes (all that are left if ``n`` is -1)."""
        return self._decode(self._for_reading().read(n))

    def readline(self):
        return self._decode(self._for_reading().readline())

    def readlines(self) -> list:
        return [self._decode(line) for line in self._for_reading().readlines()]

    def __iter__(self) -> Iterator:
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def write(self, file_content) -> None:
        if not self._writable:
            raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
        data = file_content.encode("utf-8") if isinstance(file_content, str) else file_content
        self._handle().write(bytes(data))

    def seek(self, offset: int = None, whence: int = 0, position: int = None) -> None:  # noqa: RUF013 - TF's signature
        """Moves to ``offset`` relative to ``whence`` (0 start, 1 current, 2 end)."""
        if position is not None:
            offset = position
        self._handle().seek(offset, whence)

    def tell(self) -> int:
        return self._handle().tell()

    def size(self) -> int:
        """The file's length in bytes."""
        if self._file is not None:
            self._file.flush()
        return stat(self._name).length

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


FastGFile = GFile


class FileStatistics:
    """What ``stat`` returns: ``length`` (bytes), ``mtime_nsec`` and ``is_directory``."""

    def __init__(self, length: int = 0, mtime_nsec: int = 0, is_directory: bool = False):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory

    def __repr__(self) -> str:
        return (
            f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
            f"is_directory={self.is_directory})"
        )


def exists(path) -> bool:
    return os.path.exists(path)


def isdir(path) -> bool:
    return os.path.isdir(path)


def stat(path) -> FileStatistics:
    try:
        st = os.stat(path)
    except OSError as e:
        raise _os_error(path, e) from None
    is_dir = os.path.isdir(path)
    return FileStatistics(int(st.st_size), int(st.st_mtime_ns), is_dir)


def mkdir(path) -> None:
    """Creates one directory; an existing directory is fine, a missing parent is NotFound."""
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise errors.FailedPreconditionError(
                None, None, f"{os.fsdecode(path)} is not a directory"
            ) from None
    except OSError as e:
        raise _os_error(path, e) from None


def makedirs(path) -> None:
    """Creates a directory and its missing parents; an existing directory is fine."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise errors.FailedPreconditionError(None, None, f"{os.fsdecode(path)} is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise _os_error(path, e) from None


def listdir(path) -> list[str]:
    """The entries of directory ``path`` (names only, any order)."""
    if not os.path.isdir(path):
        raise errors.NotFoundError(None, None, f"Could not find directory {os.fsdecode(path)}")
    return os.listdir(path)


def glob(pattern) -> list[str]:
    """The paths matching ``pattern`` (or any pattern in a list of them)."""
    patterns = [pattern] if isinstance(pattern, (str, bytes, os.PathLike)) else list(pattern)
    return [p for pat in patterns for p in _glob.glob(os.fspath(pat))]


def remove(path) -> None:
    """Deletes a file; a directory is FailedPrecondition, a missing file NotFound."""
    if os.path.isdir(path):
        raise errors.FailedPreconditionError(None, None, f"{os.fsdecode(path)}; Is a directory")
    try:
        os.remove(path)
    except OSError as e:
        raise _os_error(path, e) from None


def rmtree(path) -> None:
    """Deletes a directory and everything under it (or a single file)."""
    if not os.path.exists(path):
        raise errors.NotFoundError(None, None, f"{os.fsdecode(path)} not found")
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def _refuse_existing(dst, overwrite: bool) -> None:
    if not overwrite and os.path.exists(dst):
        raise errors.AlreadyExistsError(None, None, "file already exists")


def copy(src, dst, overwrite: bool = False) -> None:
    """Copies file ``src`` to ``dst``; an existing ``dst`` needs ``overwrite=True``."""
    _refuse_existing(dst, overwrite)
    if os.path.isdir(src):  # TF's local filesystem reports this as an invalid argument
        raise errors.InvalidArgumentError(
            None, None, f"{os.fsdecode(src)} is a directory; Invalid argument"
        )
    try:
        shutil.copyfile(src, dst)
    except OSError as e:
        raise _os_error(e.filename or src, e) from None


def rename(src, dst, overwrite: bool = False) -> None:
    """Moves ``src`` to ``dst``; an existing ``dst`` needs ``overwrite=True``."""
    _refuse_existing(dst, overwrite)
    try:
        os.replace(src, dst)
    except OSError as e:
        raise _os_error(src, e) from None


def walk(top, topdown: bool = True, onerror=None) -> Iterator[tuple[str, list, list]]:
    """``(dirname, subdirs, files)`` for ``top`` and every directory under it; a missing
    ``top`` yields nothing."""
    yield from os.walk(top, topdown=topdown, onerror=onerror)


def join(path, *paths) -> str:
    return os.path.join(path, *paths)


def _walk_in_order(top, in_order: bool = True):
    return walk(top, topdown=in_order)


def camel_case_namespace() -> Namespace:
    """``tf.gfile``: TF1's CamelCase names."""
    return namespace(
        "tf.gfile",
        GFile=GFile,
        FastGFile=FastGFile,
        Open=GFile,
        Exists=exists,
        MakeDirs=makedirs,
        MkDir=mkdir,
        Glob=glob,
        IsDirectory=isdir,
        ListDirectory=listdir,
        Remove=remove,
        DeleteRecursively=rmtree,
        Rename=rename,
        Copy=copy,
        Stat=stat,
        Walk=_walk_in_order,
    )


def snake_case_namespace() -> Namespace:
    """``tf.io.gfile``: TF 1.14+'s snake_case names."""
    return namespace(
        "tf.io.gfile",
        GFile=GFile,
        exists=exists,
        makedirs=makedirs,
        mkdir=mkdir,
        glob=glob,
        isdir=isdir,
        listdir=listdir,
        remove=remove,
        rmtree=rmtree,
        rename=rename,
        copy=copy,
        stat=stat,
        walk=walk,
        join=join,
    )
