"""The im2col matmuls every convolution shares (2-D and 3-D, plain and grouped): patches
``[m, k, c]`` (``k`` window taps) times the filter ``[*window, cg, oc]``, and the two
products the backprops need. Grouped convolutions (input depth a multiple of the filter's)
become a batched matmul over groups, each group's input channels meeting its slice of the
filters; the ``grouped_*`` helpers reshape the operands to and from that layout."""

from __future__ import annotations

import numpy as np

from engine.ops.split_product import matmul as split_matmul

__all__ = [
    "acc_dtype",
    "window_matmul",
    "conv_forward",
    "conv_input_taps",
    "conv_filter_grad",
    "grouped_cols",
    "grouped_dy",
    "grouped_filter",
    "grouped_out",
]


def acc_dtype(dtype):
    """float16 products are summed in float32, as TF's kernels do."""
    return np.float32 if dtype == np.float16 else dtype


def window_matmul(xp, a, b, out_dtype):
    """``a @ b`` summed in ``acc_dtype(out_dtype)``, on the intra-op threads when large."""
    acc = acc_dtype(out_dtype)
    out = split_matmul(xp, a.astype(acc, copy=False), b.astype(acc, copy=False))
    return out.astype(out_dtype, copy=False)


def conv_forward(xp, cols, f, groups: int, dtype):
    """``[m, oc]``: patches ``[m, k, c]`` times the filter ``[*window, cg, oc]``, one matmul."""
    oc = f.shape[-1]
    if groups == 1:
        return window_matmul(xp, cols.reshape(cols.shape[0], -1), f.reshape(-1, oc), dtype)
    grouped = window_matmul(xp, grouped_cols(cols, groups), grouped_filter(f, groups), dtype)
    return grouped_out(grouped, groups)


def conv_input_taps(xp, dy2, f, groups: int, k: int, dtype):
    """``[m, k, c]``: each output's gradient ``dy2`` (``[m, oc]``) spread over the taps of its
    window (the adjoint of ``conv_forward`` in the patches)."""
    oc = f.shape[-1]
    m = dy2.shape[0]
    if groups == 1:
        return window_matmul(xp, dy2, f.reshape(-1, oc).T, dtype).reshape(m, k, -1)
    gf = grouped_filter(f, groups).transpose(0, 2, 1)
    taps = window_matmul(xp, grouped_dy(dy2, groups), gf, dtype)  # [groups, m, k * cg]
    return taps.reshape(groups, m, k, -1).transpose(1, 2, 0, 3).reshape(m, k, -1)


def conv_filter_grad(xp, cols, dy2, groups: int, fshape, dtype):
    """The filter's gradient (``fshape``): patches ``[m, k, c]`` against ``dy2`` ``[m, oc]``."""
    if groups == 1:
        df = window_matmul(xp, cols.reshape(cols.shape[0], -1).T, dy2, dtype)
        return df.reshape(fshape)
    gcols = grouped_cols(cols, groups).transpose(0, 2, 1)
    df = window_matmul(xp, gcols, grouped_dy(dy2, groups), dtype)  # [groups, k * cg, ocg]
    return xp.ascontiguousarray(df.transpose(1, 0, 2)).reshape(fshape)


def grouped_cols(cols, groups: int):
    """``[m, k, c]`` patches as ``[groups, m, k * c / groups]``."""
    m, k, c = cols.shape
    return cols.reshape(m, k, groups, c // groups).transpose(2, 0, 1, 3).reshape(groups, m, -1)


def grouped_filter(f, groups: int):
    """``[*window, cg, oc]`` as ``[groups, prod(window) * cg, oc / groups]``."""
    oc = f.shape[-1]
    return f.reshape(-1, groups, oc // groups).transpose(1, 0, 2)


def grouped_out(y, groups: int):
    """``[groups, m, ocg]`` as ``[m, groups * ocg]``."""
    return y.transpose(1, 0, 2).reshape(y.shape[1], -1)


def grouped_dy(dy2, groups: int):
    """``[m, oc]`` as ``[groups, m, oc / groups]``."""
    m, oc = dy2.shape
    return dy2.reshape(m, groups, oc // groups).transpose(1, 0, 2)
