"""Device specifications: ``/job:ps/replica:0/task:1/device:GPU:0`` and the short forms.

A ``DeviceSpec`` may be partial (any field None). ``device()`` scopes merge an inner partial
spec over the outer one field by field, as TF1 does.
"""

from __future__ import annotations

__all__ = ["DeviceSpec", "canonical_name", "merge_device"]


class DeviceSpec:
    """A (possibly partial) device name.

    >>> str(DeviceSpec.from_string("/gpu:1"))
    '/device:GPU:1'
    >>> DeviceSpec(device_type="GPU", device_index=0).to_string()
    '/device:GPU:0'
    """

    __slots__ = ("job", "replica", "task", "device_type", "device_index")

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = None if device_type is None else _norm_type(device_type)
        if device_index is not None and device_index != "*":
            device_index = int(device_index)
        self.device_index = device_index

    @classmethod
    def from_string(cls, spec: str) -> DeviceSpec:
        spec = spec or ""
        out = cls()
        for part in spec.split("/"):
            if not part:
                continue
            fields = part.split(":")
            key = fields[0].lower()
            try:
                if key == "job" and len(fields) == 2:
                    out.job = fields[1]
                elif key == "replica" and len(fields) == 2:
                    out.replica = int(fields[1])
                elif key == "task" and len(fields) == 2:
                    out.task = int(fields[1])
                elif key == "device" and len(fields) in (2, 3):
                    if len(fields) == 2:  # "/device:0"? ("/device:GPU" also accepted)
                        if fields[1].isdigit():
                            raise ValueError
                        out.device_type = _norm_type(fields[1])
                    else:
                        out.device_type = _norm_type(fields[1])
                        out.device_index = "*" if fields[2] == "*" else int(fields[2])
                elif len(fields) in (1, 2) and key in ("cpu", "gpu", "test"):
                    out.device_type = _norm_type(key)
                    if len(fields) == 2:
                        out.device_index = "*" if fields[1] == "*" else int(fields[1])
                elif len(fields) in (1, 2) and fields[0].isupper() and fields[0].isalpha():
                    out.device_type = fields[0]
                    if len(fields) == 2:
                        out.device_index = int(fields[1])
                else:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"Unknown attribute: '{part}' in '{spec}' (expected a device "
                    "like '/job:worker/task:0/device:GPU:0', '/cpu:0' or '/gpu:1')"
                ) from None
        return out

    def to_string(self) -> str:
        out = ""
        if self.job is not None:
            out += "/job:" + self.job
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            idx = "*" if self.device_index is None else self.device_index
            out += f"/device:{self.device_type}:{idx}"
        return out

    def merge_from(self, other: DeviceSpec) -> None:
        """Overwrites the fields that ``other`` sets (TF1's ``DeviceSpec.merge_from``)."""
        for f in ("job", "replica", "task"):
            v = getattr(other, f)
            if v is not None:
                setattr(self, f, v)
        if other.device_type is not None:
            self.device_type = other.device_type
            self.device_index = other.device_index
        elif other.device_index is not None:
            self.device_index = other.device_index

    def make_merged_spec(self, other: DeviceSpec) -> DeviceSpec:
        merged = self.copy()
        merged.merge_from(other)
        return merged

    def copy(self) -> DeviceSpec:
        return DeviceSpec(self.job, self.replica, self.task, self.device_type, self.device_index)

    def replace(self, **kwargs) -> DeviceSpec:
        spec = self.copy()
        for k, v in kwargs.items():
            setattr(spec, k, v)
        return spec

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"DeviceSpec({self.to_string()!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())


def _norm_type(t: str) -> str:
    u = t.upper()
    return u if u in ("CPU", "GPU", "TEST") else t


def canonical_name(device) -> str:
    """The canonical string for a device given as a string, DeviceSpec or None."""
    if device is None:
        return ""
    if isinstance(device, DeviceSpec):
        return device.to_string()
    return DeviceSpec.from_string(device).to_string()


def merge_device(outer: str, inner) -> str:
    """The device an op gets inside ``device(inner)`` nested in a scope whose device is outer."""
    spec = DeviceSpec.from_string(outer) if outer else DeviceSpec()
    spec.merge_from(inner if isinstance(inner, DeviceSpec) else DeviceSpec.from_string(inner))
    return spec.to_string()
