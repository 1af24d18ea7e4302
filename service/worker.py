"""One worker process of ``flowserve --workers N``, started by the supervisor
(``service.workers``) as ``python -m service.worker``; not a command for users."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from service.cli import run_server
from service.logs import setup_logging
from service.workers import load_worker_config

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="flowserve-worker")
    parser.add_argument("--settings", required=True, help="the supervisor's settings file")
    parser.add_argument("--index", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--ready-fd", type=int, required=True, help="pipe to report serving on")
    args = parser.parse_args(argv)
    try:
        config = load_worker_config(args.settings, args.index, args.count)
    except (OSError, ValueError) as e:  # ConfigError is a ValueError
        print(f"flowserve worker {args.index}: error: {e}", file=sys.stderr)
        return 2
    setup_logging(config.log_format, config.log_level)

    def report_serving() -> None:
        os.write(args.ready_fd, b"serving\n")
        os.close(args.ready_fd)

    return run_server(config, on_serving=report_serving)


if __name__ == "__main__":
    sys.exit(main())
