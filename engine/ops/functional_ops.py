"""TF1's functional ops: ``map_fn``, ``scan``, ``foldl`` and ``foldr``.

Each is built as TensorFlow 1.15 builds it (``functional_ops.py`` and ``map_fn.py``): the
inputs are unstacked into TensorArrays, one ``while_loop`` reads element ``i``, calls ``fn``
once at graph-building time on the symbolic element, and writes the result into accumulator
TensorArrays that are stacked after the loop. So the graph does not grow with the number of
elements, the length may be unknown until run time (a placeholder's leading dimension), and
gradients flow through the While and TensorArray gradients to ``elems``, the initializer and
anything ``fn`` captures (variables included).

Nested structures follow ``engine.util.nest``: ``elems`` (and ``initializer``, ``dtype``) may
be tuples, lists, namedtuples or dicts of tensors; ``fn`` sees and returns the same nesting.
"""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import name_scope
from engine.ops import array as array_ops
from engine.ops.control_flow import while_loop
from engine.ops.tensor_array import TensorArray
from engine.tensor_shape import Dimension, TensorShape, dimension_value
from engine.util import nest

__all__ = ["foldl", "foldr", "map_fn", "scan"]


def _check_callable(fn) -> None:
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}.")


def _flat_tensors(elems) -> list:
    """The leaves of ``elems`` as tensors (named ``elem`` as TF names them)."""
    return [convert_to_tensor(e, name="elem") for e in nest.flatten(elems)]


def _length(elems_flat):
    """(n, n_static): the number of iterations, a Python int when the first input's leading
    dimension is known and nonzero, else a tensor (TF's ``dimension_value(...) or shape[0]``);
    and the static leading dimension all inputs agree on (a ``Dimension``, maybe unknown)."""
    n_static = Dimension(dimension_value(elems_flat[0].shape.with_rank_at_least(1)[0]))
    for e in elems_flat[1:]:
        other = Dimension(dimension_value(e.shape.with_rank_at_least(1)[0]))
        if not n_static.is_compatible_with(other):
            raise ValueError(
                f"All elems must have the same leading dimension; {elems_flat[0].name} has "
                f"{n_static} but {e.name} has {other}."
            )
        n_static = n_static.merge_with(other)
    n = n_static.value or array_ops.shape(elems_flat[0])[0]
    return n, n_static


def _unstacked(elems_flat, n, with_element_shape: bool) -> list[TensorArray]:
    """One TensorArray per input, holding its slices along axis 0."""
    return [
        TensorArray(
            dtype=e.dtype.base_dtype,
            size=n,
            dynamic_size=False,
            element_shape=e.shape[1:] if with_element_shape and e.shape.rank else None,
            infer_shape=True,
        ).unstack(e)
        for e in elems_flat
    ]


def _assert_fn_structure(expected, got, what: str) -> None:
    """TF's ``nest.assert_same_structure`` (types checked): ValueError when the nesting
    differs, TypeError when only the kind of sequence does (a list for a tuple)."""
    try:
        nest.assert_same_structure(expected, got)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    try:
        nest.assert_same_structure(expected, got, check_types=True)
    except ValueError:
        raise TypeError(
            f"{what}: the two structures don't have the same sequence type. Expected "
            f"{expected!r}, got {got!r}."
        ) from None


def _stack_all(accs, n_static) -> list:
    """Stacks each accumulator, setting the statically known leading dimension."""
    results = [ta.stack() for ta in accs]
    for r in results:
        r.set_shape(TensorShape([n_static]).concatenate(r.shape[1:]))
    return results


def map_fn(
    fn,
    elems,
    dtype=None,
    parallel_iterations=None,
    back_prop=True,
    swap_memory=False,
    infer_shape=True,
    name=None,
):
    """Applies ``fn`` to each slice of ``elems`` along axis 0 and stacks the results.

    ``elems`` is a tensor or a nested structure of tensors sharing their leading dimension;
    ``fn`` receives one slice of each, in the same structure. ``dtype`` (a dtype or a nested
    structure of dtypes) describes ``fn``'s output when its structure or dtypes differ from
    ``elems``'. Example::

        squares = tf.map_fn(lambda x: x * x, tf.constant([1.0, 2.0, 3.0]))
        prods = tf.map_fn(lambda p: p[0] * p[1], (a, b), dtype=tf.float32)
    """
    _check_callable(fn)
    if not parallel_iterations:
        parallel_iterations = 10
    if not nest.flatten(elems):
        raise ValueError(f"elems must be a Tensor or a nested structure of Tensors, got {elems}.")
    with name_scope(name, "map", nest.flatten(elems)):
        elems_flat = _flat_tensors(elems)
        rank = elems_flat[0].shape.rank
        if rank is not None and rank < 1:
            if len(elems_flat) == 1:
                raise ValueError("elems must be a 1+ dimensional Tensor, not a scalar")
            raise ValueError("elements in elems must be 1+ dimensional Tensors, not scalars")
        if dtype is None:
            dtype = nest.pack_sequence_as(elems, [e.dtype.base_dtype for e in elems_flat])
        dtype_flat = [dtypes.as_dtype(d).base_dtype for d in nest.flatten(dtype)]
        n, n_static = _length(elems_flat)
        elems_ta = _unstacked(elems_flat, n, with_element_shape=False)
        accs_ta = [
            TensorArray(dtype=dt, size=n, dynamic_size=False, infer_shape=infer_shape)
            for dt in dtype_flat
        ]

        def compute(i, tas):
            packed = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            out = fn(packed)
            _assert_fn_structure(dtype, out, "map_fn: fn's output does not match dtype")
            flat_out = [
                convert_to_tensor(v, preferred_dtype=dt)
                for v, dt in zip(nest.flatten(out), dtype_flat)
            ]
            for k, (v, dt) in enumerate(zip(flat_out, dtype_flat)):
                if v.dtype.base_dtype is not dt:
                    raise TypeError(
                        f"map_fn: fn's output {k} has dtype {v.dtype.base_dtype.name}, but "
                        f"dtype says {dt.name}; pass dtype= describing fn's output."
                    )
            return (i + 1, [ta.write(i, v) for ta, v in zip(tas, flat_out)])

        _, r_a = while_loop(
            lambda i, _: i < n,
            compute,
            (constant(0), accs_ta),
            parallel_iterations=parallel_iterations,
            back_prop=back_prop,
            swap_memory=swap_memory,
            maximum_iterations=n,
        )
        return nest.pack_sequence_as(dtype, _stack_all(r_a, n_static))


def scan(
    fn,
    elems,
    initializer=None,
    parallel_iterations=10,
    back_prop=True,
    swap_memory=False,
    infer_shape=True,
    reverse=False,
    name=None,
):
    """The successive values of ``a = fn(a, x)`` over the slices ``x`` of ``elems`` along
    axis 0, stacked (from the last slice backward when ``reverse``).

    Without ``initializer`` the first (or, reversed, last) slice starts the accumulator and
    is itself the first output; the accumulator then has ``elems``' structure, else
    ``initializer``'s. Example::

        tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3]))  # [1, 3, 6]
    """
    _check_callable(fn)
    with name_scope(name, "scan", nest.flatten(elems)):
        elems_flat = _flat_tensors(elems)
        n, n_static = _length(elems_flat)
        elems_ta = _unstacked(elems_flat, n, with_element_shape=True)
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            start = 1
        else:
            a_flat = [convert_to_tensor(v) for v in nest.flatten(initializer)]
            start = 0
        accs_ta = [
            TensorArray(
                dtype=a.dtype.base_dtype,
                size=n,
                element_shape=a.shape if infer_shape else None,
                dynamic_size=False,
                infer_shape=infer_shape,
            )
            for a in a_flat
        ]
        if initializer is None:
            accs_ta = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs_ta, a_flat)]
        structure = elems if initializer is None else initializer

        def compute(i, a_flat, tas):
            packed_elems = nest.pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            a_out = fn(nest.pack_sequence_as(structure, a_flat), packed_elems)
            _assert_fn_structure(
                structure, a_out, "scan: fn's output does not match the accumulator"
            )
            flat_out = nest.flatten(a_out)
            tas = [ta.write(i, v) for ta, v in zip(tas, flat_out)]
            return (i - 1 if reverse else i + 1, flat_out, tas)

        if reverse:
            initial_i, condition = n - 1 - start, (lambda i, _1, _2: i >= 0)
        else:
            initial_i, condition = start, (lambda i, _1, _2: i < n)
        _, _, r_a = while_loop(
            condition,
            compute,
            (initial_i, a_flat, accs_ta),
            parallel_iterations=parallel_iterations,
            back_prop=back_prop,
            swap_memory=swap_memory,
            maximum_iterations=n,
        )
        return nest.pack_sequence_as(structure, _stack_all(r_a, n_static))


def _fold(fn, elems, initializer, reverse, loop_kwargs):
    """foldl (``reverse`` False) and foldr: the final accumulator of ``a = fn(a, x)``."""
    _check_callable(fn)
    elems_flat = _flat_tensors(elems)
    n, _ = _length(elems_flat)
    elems_ta = nest.pack_sequence_as(elems, _unstacked(elems_flat, n, with_element_shape=False))
    if reverse:
        i = n if initializer is not None else n - 1
    else:
        i = constant(0 if initializer is not None else 1)
    if initializer is None:
        first = (n - 1) if reverse else 0
        initializer = nest.map_structure(lambda ta: ta.read(first), elems_ta)

    def compute(i, a):
        if reverse:
            i -= 1
        elem = nest.map_structure(lambda ta: ta.read(i), elems_ta)
        return [i if reverse else i + 1, fn(a, elem)]

    _, r_a = while_loop(
        (lambda i, a: i > 0) if reverse else (lambda i, a: i < n),
        compute,
        [i, initializer],
        maximum_iterations=n,
        **loop_kwargs,
    )
    return r_a


def foldl(
    fn,
    elems,
    initializer=None,
    parallel_iterations=10,
    back_prop=True,
    swap_memory=False,
    name=None,
):
    """Folds ``fn`` over the slices of ``elems`` along axis 0, first to last:
    ``fn(fn(fn(initializer, x0), x1), x2)``. Without ``initializer`` the first slice starts
    the accumulator. ``elems`` and the accumulator may be nested structures. Example::

        tf.foldl(lambda a, x: a * 2 + x, tf.constant([1, 2, 3]))  # (1*2+2)*2+3 = 11
    """
    with name_scope(name, "foldl", nest.flatten(elems)):
        kwargs = dict(
            parallel_iterations=parallel_iterations, back_prop=back_prop, swap_memory=swap_memory
        )
        return _fold(fn, elems, initializer, False, kwargs)


def foldr(
    fn,
    elems,
    initializer=None,
    parallel_iterations=10,
    back_prop=True,
    swap_memory=False,
    name=None,
):
    """Folds ``fn`` over the slices of ``elems`` along axis 0, last to first:
    ``fn(fn(fn(initializer, x2), x1), x0)``. Without ``initializer`` the last slice starts
    the accumulator. Example::

        tf.foldr(lambda a, x: a * 2 + x, tf.constant([1, 2, 3]))  # (3*2+2)*2+1 = 17
    """
    with name_scope(name, "foldr", nest.flatten(elems)):
        kwargs = dict(
            parallel_iterations=parallel_iterations, back_prop=back_prop, swap_memory=swap_memory
        )
        return _fold(fn, elems, initializer, True, kwargs)
