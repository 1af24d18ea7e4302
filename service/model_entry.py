"""A model as the manager tracks it: its versions, configuration, labels and readiness."""

from __future__ import annotations

from dataclasses import dataclass, field

from service.config import ModelConfig
from service.repository import ModelSource
from service.servable import Servable, VersionState

__all__ = ["ModelEntry"]


@dataclass
class ModelEntry:
    name: str
    source: ModelSource | None = None
    versions: dict[int, Servable] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)
    config: ModelConfig = field(default_factory=ModelConfig)
    config_error: str | None = None
    disabled: bool = False  # unloaded through the repository API
    failed_stamp: dict[int, str | None] = field(default_factory=dict)
    desired: set[int] = field(default_factory=set)  # versions the policy asks to serve

    def ready(self) -> bool:
        """Every desired version serves, or an older version still serves in its place
        (a rolling update: the replacement is loading, or failed to load)."""
        if self.config_error and not self.versions:
            return False
        stand_in = any(
            s.state is VersionState.AVAILABLE
            for v, s in self.versions.items()
            if v not in self.desired
        )
        for v in self.desired:
            s = self.versions.get(v)
            if (s is None or s.state is not VersionState.AVAILABLE) and not stand_in:
                return False
        return True

    def state_of(self, candidates: list[Servable]) -> tuple[str, str | None]:
        """(state, error) of these versions for readiness probes: READY, LOADING, FAILED
        (with the load errors), UNLOADING or UNAVAILABLE."""
        states = {s.state for s in candidates}
        if VersionState.AVAILABLE in states:
            return "READY", None
        if states & {VersionState.START, VersionState.LOADING}:
            return "LOADING", None
        errors = [f"version {s.version}: {s.error}" for s in candidates if s.error]
        if self.config_error:
            errors.append(f"config: {self.config_error}")
        if errors:
            return "FAILED", "; ".join(errors)
        if VersionState.UNLOADING in states:
            return "UNLOADING", None
        return "UNAVAILABLE", None
