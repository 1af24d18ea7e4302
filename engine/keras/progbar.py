"""Keras' progress display (``tf.keras.utils.Progbar``): a bar redrawn in place on a terminal,
and, at the end of an epoch, the line TF 1.15's Keras prints (``verbose=1``: bar and time per
sample; ``verbose=2``: one line per epoch)."""

from __future__ import annotations

import sys
import time

__all__ = ["Progbar"]


def _format_value(v) -> str:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return f" {v}"
    return f" {v:.4f}" if abs(v) > 1e-3 else f" {v:.4e}"


class Progbar:
    """``update(current, values)`` with ``values`` a list of ``(name, value)``; values not in
    ``stateful_metrics`` are averaged over the steps they were given for."""

    def __init__(
        self, target, width=30, verbose=1, interval=0.05, stateful_metrics=None, unit_name="step"
    ):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.stateful_metrics = set(stateful_metrics or [])
        self.unit_name = unit_name
        self._values: dict = {}
        self._order: list = []
        self._start = time.perf_counter()
        self._last_update = 0.0
        self._seen = 0
        self._dynamic = hasattr(sys.stdout, "isatty") and sys.stdout.isatty()

    def update(self, current, values=None, finalize=None) -> None:
        step = max(current - self._seen, 1)
        for name, value in values or []:
            if name not in self._order:
                self._order.append(name)
            if name in self.stateful_metrics:
                self._values[name] = [value, 1]
            else:
                prev = self._values.get(name, [0.0, 0])
                self._values[name] = [prev[0] + value * step, prev[1] + step]
        self._seen = current
        now = time.perf_counter()
        done = (
            finalize
            if finalize is not None
            else (self.target is not None and current >= self.target)
        )
        if (
            self.verbose == 1
            and self._dynamic
            and not done
            and (now - self._last_update >= self.interval)
        ):
            sys.stdout.write("\r" + self._bar(current) + self._metrics())
            sys.stdout.flush()
            self._last_update = now
        elif done and self.verbose and finalize is not False:
            self._print_final(current)

    def add(self, n, values=None) -> None:
        self.update(self._seen + n, values)

    def finish(self, values) -> None:
        """The epoch's final line with these (already aggregated) values."""
        self.stateful_metrics.update(name for name, _ in values)
        self._values = {name: [v, 1] for name, v in values}
        self._order = [name for name, _ in values]
        self._print_final(self.target)

    def _bar(self, current) -> str:
        if self.target is None:
            return f"{current:7d}/Unknown"
        digits = len(str(self.target))
        text = f"{current:{digits}d}/{self.target}"
        if self.verbose == 2:
            return text
        prog = min(current / max(self.target, 1), 1.0)
        filled = int(self.width * prog)
        bar = "=" * filled
        if current < self.target:
            bar = bar[:-1] + ">" if filled else ">"
        return f"{text} [{bar}{'.' * (self.width - len(bar))}]"

    def _metrics(self) -> str:
        parts = []
        for name in self._order:
            total, count = self._values[name]
            parts.append(f" - {name}:{_format_value(total / max(count, 1))}")
        return "".join(parts)

    def _print_final(self, current) -> None:
        elapsed = time.perf_counter() - self._start
        per = elapsed / max(current or 1, 1)
        if self.verbose == 2:
            line = f"{self._bar(current)} - {elapsed:.0f}s{self._metrics()}"
        else:
            unit = "us" if per < 1e-3 else "ms" if per < 1 else "s"
            scale = 1e6 if unit == "us" else 1e3 if unit == "ms" else 1
            line = (
                f"{self._bar(current)} - {elapsed:.0f}s {per * scale:.0f}{unit}/{self.unit_name}"
                f"{self._metrics()}"
            )
        sys.stdout.write(("\r" if self._dynamic else "") + line + "\n")
        sys.stdout.flush()
