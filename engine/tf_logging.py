"""TF1's ``tf.logging``: Python's logging under the logger "tensorflow", with TF's levels."""

from __future__ import annotations

import inspect
import logging as _logging

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_logger = _logging.getLogger("tensorflow")
_counts: dict[tuple, int] = {}


def get_logger() -> _logging.Logger:
    return _logger


def set_verbosity(v) -> None:
    _logger.setLevel(v)


def get_verbosity() -> int:
    return _logger.getEffectiveLevel()


def log(level, msg, *args, **kwargs) -> None:
    _logger.log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs) -> None:
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs) -> None:
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs) -> None:
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs) -> None:
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs) -> None:
    _logger.fatal(msg, *args, **kwargs)


def log_every_n(level, msg, n, *args) -> None:
    """Logs ``msg`` on the first call from a call site and every ``n``-th after."""
    frame = inspect.currentframe().f_back
    key = (frame.f_code.co_filename, frame.f_lineno)
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % max(int(n), 1) == 0:
        _logger.log(level, msg, *args)


def log_first_n(level, msg, n, *args) -> None:
    frame = inspect.currentframe().f_back
    key = (frame.f_code.co_filename, frame.f_lineno, "first")
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < int(n):
        _logger.log(level, msg, *args)
