"""libstdc++'s ``std::priority_queue`` and ``std::sort``, step for step.

TensorFlow's ``CombinedNonMaxSuppression`` orders candidates by score alone with these two
(neither is stable), so which of two equally scored boxes comes first is whatever their
algorithms do; reproducing them is the only way to return the boxes TF returns. ``less`` is
the C++ comparator: ``less(a, b)`` is True when ``a`` orders before ``b`` in the sorted
sequence (for the heap: when ``a`` has the lower priority).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["PriorityQueue", "std_sort"]

_THRESHOLD = 16  # libstdc++'s _S_threshold: ranges this short are left to insertion sort


def _push_heap(a: list, hole: int, top: int, value, less: Callable) -> None:
    parent = (hole - 1) // 2
    while hole > top and less(a[parent], value):
        a[hole] = a[parent]
        hole = parent
        parent = (hole - 1) // 2
    a[hole] = value


def _adjust_heap(a: list, hole: int, length: int, value, less: Callable) -> None:
    top = second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if less(a[second], a[second - 1]):
            second -= 1
        a[hole] = a[second]
        hole = second
    if length % 2 == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        a[hole] = a[second - 1]
        hole = second - 1
    _push_heap(a, hole, top, value, less)


class PriorityQueue:
    """``std::priority_queue<T, std::vector<T>, Less>``: push, pop and top."""

    def __init__(self, less: Callable):
        self._items: list = []
        self._less = less

    def __len__(self) -> int:
        return len(self._items)

    def push(self, value) -> None:
        self._items.append(value)
        _push_heap(self._items, len(self._items) - 1, 0, value, self._less)

    def pop(self):
        """Removes and returns the top (``top()`` then ``pop()``)."""
        a = self._items
        top = a[0]
        if len(a) > 1:
            value = a[-1]
            a[-1] = a[0]
            _adjust_heap(a, 0, len(a) - 1, value, self._less)
        a.pop()
        return top


def _heap_sort(a: list, first: int, last: int, less: Callable) -> None:
    """``std::partial_sort(first, last, last)``: make_heap, then sort_heap."""
    part = a[first:last]
    n = len(part)
    for parent in range((n - 2) // 2, -1, -1):
        _adjust_heap(part, parent, n, part[parent], less)
    for end in range(n - 1, 0, -1):
        value = part[end]
        part[end] = part[0]
        _adjust_heap(part, 0, end, value, less)
    a[first:last] = part


def _move_median_to_first(a: list, result: int, x: int, y: int, z: int, less) -> None:
    if less(a[x], a[y]):
        pick = y if less(a[y], a[z]) else (z if less(a[x], a[z]) else x)
    else:
        pick = x if less(a[x], a[z]) else (z if less(a[y], a[z]) else y)
    a[result], a[pick] = a[pick], a[result]


def _unguarded_partition(a: list, first: int, last: int, pivot: int, less) -> int:
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _introsort_loop(a: list, first: int, last: int, depth: int, less: Callable) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        mid = first + (last - first) // 2
        _move_median_to_first(a, first, first + 1, mid, last - 1, less)
        cut = _unguarded_partition(a, first + 1, last, first, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _linear_insert(a: list, i: int, less: Callable) -> None:
    value, j = a[i], i - 1
    while less(value, a[j]):
        a[j + 1] = a[j]
        j -= 1
    a[j + 1] = value


def _insertion_sort(a: list, first: int, last: int, less: Callable) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            a[first : i + 1] = [a[i], *a[first:i]]
        else:
            _linear_insert(a, i, less)


def std_sort(a: list, less: Callable) -> None:
    """Sorts ``a`` in place as libstdc++'s ``std::sort(a.begin(), a.end(), less)`` does."""
    n = len(a)
    if n < 2:
        return
    _introsort_loop(a, 0, n, 2 * (n.bit_length() - 1), less)
    if n > _THRESHOLD:
        _insertion_sort(a, 0, _THRESHOLD, less)
        for i in range(_THRESHOLD, n):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, 0, n, less)
