"""Request scheduling: how a validated request reaches a signature's callable.

``DirectScheduler`` runs each request on its own in the compute thread pool, off the event
loop, bounded by the request's deadline.
"""

from __future__ import annotations

import asyncio

from service.errors import DeadlineExceeded

__all__ = ["DirectScheduler"]


class DirectScheduler:
    """Runs every request individually in ``executor``."""

    def __init__(self, executor, metrics=None, model: str = "", version: str = ""):
        self._executor = executor
        self._metrics = metrics
        self._labels = (model, version)

    async def submit(self, signature, arrays, deadline: float):
        loop = asyncio.get_running_loop()
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise DeadlineExceeded("deadline exceeded before the request could run")
        future = loop.run_in_executor(self._executor, signature.run, arrays)
        try:
            return await asyncio.wait_for(asyncio.shield(future), remaining)
        except TimeoutError:
            raise DeadlineExceeded(f"deadline exceeded while running the model (limit "
                                   f"{remaining:.3f}s)") from None

    async def close(self) -> None:
        return None
