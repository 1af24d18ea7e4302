"""``tf.Summary``: a summary built in Python, as TF1 programs write scalars they computed
outside the graph::

    summary = tf.Summary(value=[tf.Summary.Value(tag="accuracy", simple_value=acc)])
    writer.add_summary(summary, step)
"""

from __future__ import annotations

import numbers

from engine.util import summary_records as records


class _Value:
    """``Summary.Value``: a tag with a ``simple_value`` (scalars are what this class holds)."""

    def __init__(self, tag="", simple_value=None, node_name=None):
        if not isinstance(tag, str):
            raise TypeError(f"Summary.Value tag must be a string, got {type(tag).__name__}")
        if simple_value is not None and not isinstance(simple_value, numbers.Real):
            raise TypeError(
                f"simple_value must be a real number, got {type(simple_value).__name__}"
            )
        self.tag = tag
        self.simple_value = simple_value
        self.node_name = node_name

    def __repr__(self) -> str:
        return f"Summary.Value(tag={self.tag!r}, simple_value={self.simple_value!r})"


class Summary:
    """A list of ``Summary.Value``; ``SerializeToString()`` gives the protobuf bytes that
    ``FileWriter.add_summary`` writes."""

    Value = _Value

    def __init__(self, value=None):
        self.value = list(value or [])
        for v in self.value:
            if not isinstance(v, _Value):
                raise TypeError(f"Summary values must be Summary.Value, got {type(v).__name__}")

    def SerializeToString(self) -> bytes:
        return records.summary(
            [records.summary_value(v.tag, simple_value=v.simple_value) for v in self.value]
        )

    def __repr__(self) -> str:
        return f"Summary(value={self.value!r})"


class SessionLog:
    """``tf.SessionLog``: a START/STOP/CHECKPOINT marker for ``FileWriter.add_session_log``
    (TensorBoard drops events after a restart's START that are older than it)."""

    STATUS_UNSPECIFIED = 0
    START = 1
    STOP = 2
    CHECKPOINT = 3

    def __init__(self, status=0, checkpoint_path="", msg=""):
        if status not in (0, 1, 2, 3):
            raise ValueError(f"SessionLog status must be 0 to 3 (START, STOP, ...), got {status!r}")
        if not isinstance(checkpoint_path, str) or not isinstance(msg, str):
            raise TypeError("SessionLog checkpoint_path and msg must be strings")
        self.status = status
        self.checkpoint_path = checkpoint_path
        self.msg = msg

    def SerializeToString(self) -> bytes:
        return records.session_log(self.status, self.checkpoint_path, self.msg)

    def __repr__(self) -> str:
        return f"SessionLog(status={self.status}, checkpoint_path={self.checkpoint_path!r})"
