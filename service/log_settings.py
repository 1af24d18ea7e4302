"""Triton's logging extension: read and change the server's log settings at run time.

Settings, with Triton's names: ``log_info``, ``log_warning``, ``log_error`` (bools: which
severities are written), ``log_verbose_level`` (an integer; above 0 turns on debug logs),
``log_format`` (``default`` and ``ISO8601``: text lines with an ISO 8601 time; ``json``:
one JSON object per line, flowserve's extension) and ``log_file`` (always ``""``: logs go to
stderr; a request cannot make the server write to a file). They change the process's root
logger, so they apply to every logger of the server at once.
"""

from __future__ import annotations

import logging

from service.errors import FailedPrecondition, InvalidInput

__all__ = ["LogSettings"]

_FORMATS = ("default", "ISO8601", "json")
_BOOLS = ("log_info", "log_warning", "log_error")


class LogSettings:
    """The current settings (derived from the root logger's level) and their updates."""

    def __init__(self, log_format: str = "text"):
        self.log_format = "json" if log_format == "json" else "default"
        # Why changes are refused (a worker of --workers N: log settings are per process).
        self.refusal: str | None = None

    def current(self) -> dict:
        level = logging.getLogger().getEffectiveLevel()
        return {
            "log_file": "",
            "log_info": level <= logging.INFO,
            "log_warning": level <= logging.WARNING,
            "log_error": level <= logging.ERROR,
            "log_verbose_level": 1 if level <= logging.DEBUG else 0,
            "log_format": self.log_format,
        }

    def update(self, changes: dict) -> dict:
        """Applies ``changes`` (validated as a whole first) and returns the new settings."""
        if not isinstance(changes, dict):
            raise InvalidInput("log settings must be an object")
        if changes and self.refusal is not None:
            raise FailedPrecondition(self.refusal)
        unknown = sorted(set(changes) - {*_BOOLS, "log_verbose_level", "log_format", "log_file"})
        if unknown:
            raise InvalidInput(f"unknown log setting(s) {unknown}")
        merged = {**self.current(), **changes}
        for key in _BOOLS:
            if not isinstance(merged[key], bool):
                raise InvalidInput(f"{key} must be true or false, got {merged[key]!r}")
        verbose = merged["log_verbose_level"]
        if isinstance(verbose, bool) or not isinstance(verbose, int) or verbose < 0:
            raise InvalidInput(f"log_verbose_level must be a non-negative integer, got {verbose!r}")
        if merged["log_format"] not in _FORMATS:
            raise InvalidInput(
                f"log_format must be one of {', '.join(_FORMATS)}, got {merged['log_format']!r}"
            )
        if merged["log_file"] != "":
            raise InvalidInput("log_file cannot be set: flowserve logs to stderr")
        if verbose > 0:
            level = logging.DEBUG
        elif merged["log_info"]:
            level = logging.INFO
        elif merged["log_warning"]:
            level = logging.WARNING
        elif merged["log_error"]:
            level = logging.ERROR
        else:
            level = logging.CRITICAL
        logging.getLogger().setLevel(level)
        if merged["log_format"] != self.log_format:
            self._set_format(merged["log_format"])
        return self.current()

    def _set_format(self, log_format: str) -> None:
        from service.cli import JsonFormatter  # the formatter the CLI installs for json logs

        if log_format == "json":
            formatter: logging.Formatter = JsonFormatter()
        else:
            formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        for handler in logging.getLogger().handlers:
            handler.setFormatter(formatter)
        self.log_format = log_format
