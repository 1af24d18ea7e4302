"""The engine's runtime: how a ``Session`` compiles and runs a graph.

- ``plan``: ``compile_plan`` turns (feeds, fetches) into a ``Plan`` through named phases
  (order, slots, placement, binding, fetches, frees).
- ``interpreter``: the loop running a plan's steps, the typed errors naming the failing op,
  and ``Cancellation``, the token that stops a run between ops and loop iterations.
- ``placement``: ``Placer``, the device of each op.
- ``bind``: ``BindContext``, what an op's ``bind`` hook sees and may ask the session for.
- ``feeds``: fed-value conversion, fetch structures, collecting results.
- ``values``: ``VariableSlot``, device copies and checked-mode wrappers.

``engine.session`` holds the ``Session`` classes built on these.
"""

from engine.runtime.bind import BindContext
from engine.runtime.interpreter import Cancellation, MemoryBudget
from engine.runtime.plan import Plan, compile_plan
from engine.runtime.values import VariableSlot

__all__ = ["BindContext", "Cancellation", "MemoryBudget", "Plan", "VariableSlot", "compile_plan"]
