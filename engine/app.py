"""``tf.app``: TF1's program entry point, ``tf.app.run``, and ``tf.app.flags``.

``run(main)`` parses ``sys.argv`` into ``tf.flags.FLAGS`` (unknown flags are passed on to
``main``, as TF 1.15's ``run`` does), calls ``main(argv)`` and exits with what it returns.
A bad flag value raises ``tf.flags.IllegalFlagValueError`` out of ``run``, as in TF.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from engine import flags

__all__ = ["flags", "run"]


def run(main: Callable | None = None, argv: Sequence[str] | None = None):
    """Parses flags from ``argv`` (default ``sys.argv``), runs ``main(remaining_argv)`` and
    calls ``sys.exit`` with its return value. ``main`` defaults to ``__main__.main``."""
    if main is None:
        main = getattr(sys.modules["__main__"], "main", None)
        if main is None:
            raise AttributeError("tf.app.run() was given no main and __main__ has no 'main'")
    args = list(sys.argv if argv is None else argv)
    remaining = flags.FLAGS(args, known_only=True)
    sys.exit(main(remaining))
