"""Affine resampling of images in numpy, for ``ImageDataGenerator``'s random rotations,
shifts, shears and zooms: Keras' ``apply_affine_transform`` (the same matrices, composed
and centred as TF composes them), sampling each channel as SciPy's
``ndimage.affine_transform`` does — output pixel ``o`` reads the input at ``M @ o + offset``
— with nearest (order 0) or bilinear (order 1) interpolation."""

from __future__ import annotations

import numpy as np

__all__ = ["FILL_MODES", "affine_sample", "apply_affine_transform", "transform_matrix"]

FILL_MODES = ("nearest", "constant", "reflect", "wrap")


def _fold(idx: np.ndarray, n: int, mode: str) -> np.ndarray:
    """Integer indices mapped into 0..n-1 by the fill mode."""
    if mode == "wrap":
        return np.mod(idx, n)
    if mode == "reflect":  # half-sample symmetric: d c b a | a b c d | d c b a
        period = np.mod(idx, 2 * n)
        return np.where(period >= n, 2 * n - 1 - period, period)
    return np.clip(idx, 0, n - 1)


def affine_sample(image, matrix, offset, order=1, fill_mode="nearest", cval=0.0) -> np.ndarray:
    """``image`` (rows, cols) resampled: ``out[o] = image[matrix @ o + offset]``."""
    if fill_mode not in FILL_MODES:
        raise ValueError(f"fill_mode must be one of {FILL_MODES}, got {fill_mode!r}")
    if order not in (0, 1):
        raise ValueError(f"interpolation order must be 0 (nearest) or 1 (bilinear), got {order}")
    image = np.asarray(image)
    rows, cols = image.shape
    grid = np.indices((rows, cols), dtype=np.float64).reshape(2, -1)
    coords = np.asarray(matrix, np.float64) @ grid + np.asarray(offset, np.float64)[:, None]
    r, c = coords
    if order == 0:
        r0, c0 = np.floor(r + 0.5).astype(np.int64), np.floor(c + 0.5).astype(np.int64)
        out = image[_fold(r0, rows, fill_mode), _fold(c0, cols, fill_mode)].astype(np.float64)
    else:
        r0, c0 = np.floor(r).astype(np.int64), np.floor(c).astype(np.int64)
        fr, fc = r - r0, c - c0
        out = np.zeros_like(r)
        for dr, wr in ((0, 1 - fr), (1, fr)):
            for dc, wc in ((0, 1 - fc), (1, fc)):
                ri, ci = _fold(r0 + dr, rows, fill_mode), _fold(c0 + dc, cols, fill_mode)
                out += wr * wc * image[ri, ci]
    if fill_mode == "constant":
        eps = 1e-9
        outside = (r < -eps) | (r > rows - 1 + eps) | (c < -eps) | (c > cols - 1 + eps)
        out[outside] = cval
    return out.reshape(rows, cols).astype(image.dtype, copy=False)


def transform_matrix(theta=0, tx=0, ty=0, shear=0, zx=1, zy=1):
    """Keras' composition rotation @ shift @ shear @ zoom (degrees for angles), or None when
    it is the identity."""
    parts = []
    if theta != 0:
        t = np.deg2rad(theta)
        parts.append([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
    if tx != 0 or ty != 0:
        parts.append([[1, 0, tx], [0, 1, ty], [0, 0, 1]])
    if shear != 0:
        s = np.deg2rad(shear)
        parts.append([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
    if zx != 1 or zy != 1:
        parts.append([[zx, 0, 0], [0, zy, 0], [0, 0, 1]])
    if not parts:
        return None
    m = np.asarray(parts[0], np.float64)
    for p in parts[1:]:
        m = m @ np.asarray(p, np.float64)
    return m


def _centered(matrix, rows, cols):
    ox, oy = rows / 2 - 0.5, cols / 2 - 0.5
    offset = np.array([[1, 0, ox], [0, 1, oy], [0, 0, 1]])
    reset = np.array([[1, 0, -ox], [0, 1, -oy], [0, 0, 1]])
    return offset @ matrix @ reset


def apply_affine_transform(
    x, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1, row_axis=1, col_axis=2, channel_axis=0,
    fill_mode="nearest", cval=0.0, order=1,
):  # fmt: skip
    """One rank-3 image rotated by ``theta`` degrees, shifted by ``tx`` rows and ``ty``
    columns, sheared by ``shear`` degrees and zoomed by ``zx``/``zy`` about its centre."""
    x = np.asarray(x)
    if sorted((row_axis, col_axis, channel_axis)) != [0, 1, 2]:
        raise ValueError(
            f"row_axis, col_axis and channel_axis must be 0, 1 and 2 in some order, got "
            f"{(row_axis, col_axis, channel_axis)}"
        )
    if x.ndim != 3:
        raise ValueError("Input arrays must be multi-channel 2D images.")
    if channel_axis not in (0, 2):
        raise ValueError("Channels are allowed and the first and last dimensions.")
    m = transform_matrix(theta, tx, ty, shear, zx, zy)
    if m is None:
        return x
    m = _centered(m, x.shape[row_axis], x.shape[col_axis])
    channels = np.rollaxis(x, channel_axis, 0)
    if col_axis > row_axis:  # the matrix is in (row, col) order of the channel images
        m[:, [0, 1]] = m[:, [1, 0]]
        m[[0, 1]] = m[[1, 0]]
    images = [affine_sample(ch, m[:2, :2], m[:2, 2], order, fill_mode, cval) for ch in channels]
    return np.rollaxis(np.stack(images, axis=0), 0, channel_axis + 1)
