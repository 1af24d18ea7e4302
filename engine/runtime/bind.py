"""Binding: what an op's ``bind`` hook may know and ask for when a plan is compiled."""

from __future__ import annotations

from functools import partial

from engine import errors
from engine.framework.graph import Operation

__all__ = ["BindContext", "bind_kernel"]


class BindContext:
    """What a kernel's ``bind`` hook may know when a plan is compiled, and the session state
    it may ask for (``variable_slot``, ``rng``, ``compile_function``)."""

    __slots__ = ("session", "op", "device", "input_persistent", "outputs_used", "input_devices")

    def __init__(self, session, op, device, input_persistent, outputs_used, input_devices=None):
        # The session compiling the plan (a key for per-session state kept by op families).
        self.session = session
        self.op = op
        self.device = device
        # Per input: may the value alias memory that outlives the run (constants, variables,
        # caller-owned feeds)? Ops that store an input (Assign) copy it when True.
        self.input_persistent = input_persistent
        # Per output: is it consumed or fetched within this plan?
        self.outputs_used = outputs_used
        # Per input: the device its value (or, for a reference, its variable) lives on;
        # None in single-device sessions.
        self.input_devices = input_devices

    @property
    def xp(self):
        return self.device.xp

    def variable_slot(self):
        """The session's storage of the variable this op (a ``VariableV2``) defines, created
        on the op's device the first time."""
        return self.session._slot_for(self.op, self.device)

    def rng(self, seed: int, seed2: int):
        """The op's random generator in this session: each run draws the next values."""
        return self.session._rng_for(self.op, (seed, seed2))

    def compile_function(self, fg, input_devices=None):
        """A callable ``f(*inputs) -> [outputs]`` running function graph ``fg`` on this
        op's device; ``input_devices`` tells where variables passed by reference live."""
        return self.session._compile_function(fg, self.device, input_devices)


def bind_kernel(op: Operation, ctx: BindContext):
    """``op``'s kernel with its array module, attrs and bound session state applied."""
    opdef = op._opdef
    kernel = opdef.kernel
    if kernel is None:
        raise errors.UnimplementedError(op.node_def, op, f"No kernel for op type {op._type}")
    attrs = {k: v for k, v in op._attrs.items() if k[0] != "_"}
    if opdef.bind is not None:
        attrs.update(opdef.bind(op, ctx))
    return partial(kernel, ctx.device.xp, **attrs)
