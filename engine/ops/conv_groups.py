"""Grouped convolution (input depth a multiple of the filter's): the im2col matmul of
``conv.py`` becomes a batched matmul over groups, each group's input channels meeting its
slice of the filters. These reshape the operands to and from the grouped layout."""

from __future__ import annotations

__all__ = ["grouped_cols", "grouped_dy", "grouped_filter", "grouped_out"]


def grouped_cols(cols, groups: int):
    """``[m, k, c]`` patches as ``[groups, m, k * c / groups]``."""
    m, k, c = cols.shape
    return cols.reshape(m, k, groups, c // groups).transpose(2, 0, 1, 3).reshape(groups, m, -1)


def grouped_filter(f, groups: int):
    """``[kh, kw, cg, oc]`` as ``[groups, kh * kw * cg, oc / groups]``."""
    kh, kw, cg, oc = f.shape
    return f.reshape(kh * kw * cg, groups, oc // groups).transpose(1, 0, 2)


def grouped_out(y, groups: int):
    """``[groups, m, ocg]`` as ``[m, groups * ocg]``."""
    return y.transpose(1, 0, 2).reshape(y.shape[1], -1)


def grouped_dy(dy2, groups: int):
    """``[m, oc]`` as ``[groups, m, oc / groups]``."""
    m, oc = dy2.shape
    return dy2.reshape(m, groups, oc // groups).transpose(1, 0, 2)
