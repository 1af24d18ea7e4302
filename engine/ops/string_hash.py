"""String hashing as TensorFlow does it: ``StringToHashBucketFast`` (FarmHash's
``Fingerprint64``, TF's ``Fingerprint64``) and ``StringToHashBucketStrong`` (SipHash-2-4 keyed
by two uint64s), each ``hash % num_buckets``.

Feature columns hash out-of-vocabulary strings (``categorical_column_with_hash_bucket``,
vocabularies with ``num_oov_buckets``) and crossed features with these, so a served model
puts an example in the same bucket only if the hash is TF's to the bit. Both hashes are
written out here in Python integers from their reference definitions (farmhash.cc's
``farmhashna::Hash64``, the SipHash paper) and checked against TensorFlow's outputs.
"""

from __future__ import annotations

import struct

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import name_scope
from engine.framework.registry import Attr, OpFlags, op
from engine.ops._common import check_dtype, create

__all__ = [
    "fingerprint64",
    "fingerprint_cat64",
    "siphash24",
    "string_to_hash_bucket_fast",
    "string_to_hash_bucket_strong",
]

_M = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F
_CPU = OpFlags(device_types=("CPU",))


def _fetch64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _fetch32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _M
        b = _fetch64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M
        d = ((_rot(a, 25) + b) * mul) & _M
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        return _hash_len16((n + (_fetch32(s, 0) << 3)) & _M, _fetch32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix((y * _K2 ^ z * _K0) & _M) * _K2) & _M
    return _K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    return _hash_len16(
        (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M,
        (a + _rot((b + _K2) & _M, 18) + c) & _M,
        mul,
    )


def _len33to64(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _M
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M
    d = (_fetch64(s, n - 16) * _K2) & _M
    y = (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M
    z = _hash_len16(y, (a + _rot((b + _K2) & _M, 18) + c) & _M, mul)
    e = (_fetch64(s, 16) * mul) & _M
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _M
    h = ((z + _fetch64(s, n - 24)) * mul) & _M
    return _hash_len16(
        (_rot((e + f) & _M, 43) + _rot(g, 30) + h) & _M, (e + _rot((f + a) & _M, 18) + g) & _M, mul
    )


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = (_fetch64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def _round(s: bytes, i: int, x, y, z, v, w, mul: int, last: bool):
    """One 64-byte step of ``farmhashna::Hash64``'s loop (``last``: its final step)."""
    x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & _M, 37) * mul) & _M
    y = (_rot((y + v[1] + _fetch64(s, i + 48)) & _M, 42) * mul) & _M
    x ^= (w[1] * 9) & _M if last else w[1]
    y = (y + (v[0] * 9 if last else v[0]) + _fetch64(s, i + 40)) & _M
    z = (_rot((z + w[0]) & _M, 33) * mul) & _M
    v = _weak32(s, i, (v[1] * mul) & _M, (x + w[0]) & _M)
    w = _weak32(s, i + 32, (z + w[1]) & _M, (y + _fetch64(s, i + 16)) & _M)
    return z, y, x, v, w  # x and z swap


def fingerprint64(s: bytes) -> int:
    """FarmHash ``Fingerprint64`` of ``s`` (TensorFlow's ``Fingerprint64``), as uint64."""
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    seed = 81
    x = (seed * _K2 + _fetch64(s, 0)) & _M
    y = (seed * _K1 + 113) & _M
    z = (_shift_mix((y * _K2 + 113) & _M) * _K2) & _M
    v = w = (0, 0)
    end = ((n - 1) // 64) * 64
    for i in range(0, end, 64):
        x, y, z, v, w = _round(s, i, x, y, z, v, w, _K1, False)
    mul = _K1 + ((z & 0xFF) << 1)
    last = n - 64
    w0 = (w[0] + ((n - 1) & 63)) & _M
    v = ((v[0] + w0) & _M, v[1])
    w = ((w0 + v[0]) & _M, w[1])
    x, y, z, v, w = _round(s, last, x, y, z, v, w, mul, True)
    return _hash_len16(
        (_hash_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M,
        (_hash_len16(v[1], w[1], mul) + x) & _M,
        mul,
    )


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TF's ``FingerprintCat64``: two fingerprints combined (how ``SparseCross`` chains a
    cross's features into one hash)."""
    mul = 0xC6A4A7935BD1E995
    result = fp1 ^ mul
    result ^= (_shift_mix((fp2 * mul) & _M) * mul) & _M
    result = (result * mul) & _M
    result = (_shift_mix(result) * mul) & _M
    return _shift_mix(result)


def _sipround(v0, v1, v2, v3):
    v0 = (v0 + v1) & _M
    v1 = _rot(v1, 64 - 13) ^ v0
    v0 = _rot(v0, 32)
    v2 = (v2 + v3) & _M
    v3 = _rot(v3, 64 - 16) ^ v2
    v0 = (v0 + v3) & _M
    v3 = _rot(v3, 64 - 21) ^ v0
    v2 = (v2 + v1) & _M
    v1 = _rot(v1, 64 - 17) ^ v2
    v2 = _rot(v2, 32)
    return v0, v1, v2, v3


def siphash24(k0: int, k1: int, s: bytes) -> int:
    """SipHash-2-4 of ``s`` keyed by ``(k0, k1)`` (TF's ``StrongKeyedHash``), as uint64."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(s)
    tail = s[n - n % 8 :] + bytes(7 - n % 8) + bytes([n & 0xFF])
    for block in (*struct.unpack_from(f"<{n // 8}Q", s), _fetch64(tail, 0)):
        v3 ^= block
        v0, v1, v2, v3 = _sipround(*_sipround(v0, v1, v2, v3))
        v0 ^= block
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


# -- the ops --------------------------------------------------------------------------------


def _as_bytes(v) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode("utf-8")


def _buckets(strings, num_buckets: int, hash_fn):
    a = np.asarray(strings, dtype=object)
    if num_buckets < 1:
        raise errors.InvalidArgumentError(
            None, None, f"num_buckets must be >= 1, got {num_buckets}"
        )
    out = np.fromiter(
        (hash_fn(_as_bytes(s)) % num_buckets for s in a.reshape(-1)), np.int64, a.size
    )
    return out.reshape(a.shape)


def _hash_infer(o):
    check_dtype(o, 0, (dtypes.string,))
    if o._attrs["num_buckets"] < 1:
        raise ValueError(f"{o.type}: num_buckets must be >= 1, got {o._attrs['num_buckets']}")
    return [(dtypes.int64, o._inputs[0]._shape)]


def _strong_infer(o):
    if len(o._attrs["key"]) != 2:
        raise ValueError(
            f"StringToHashBucketStrong: key must have 2 elements, got {o._attrs['key']}"
        )
    return _hash_infer(o)


@op(
    "StringToHashBucketFast",
    infer=_hash_infer,
    differentiable=False,
    inputs=("input",),
    attrs=(Attr("num_buckets", "int"),),
    flags=_CPU,
)
def _to_bucket_fast(xp, x, *, num_buckets):
    return _buckets(x, num_buckets, fingerprint64)


@op(
    "StringToHashBucketStrong",
    infer=_strong_infer,
    differentiable=False,
    inputs=("input",),
    attrs=(Attr("num_buckets", "int"), Attr("key", "list(int)")),
    flags=_CPU,
)
def _to_bucket_strong(xp, x, *, num_buckets, key):
    k0, k1 = (int(k) & _M for k in key)
    return _buckets(x, num_buckets, lambda s: siphash24(k0, k1, s))


def string_to_hash_bucket_fast(input, num_buckets: int, name=None):  # noqa: A002 - TF's name
    """Each string's FarmHash fingerprint modulo ``num_buckets`` (int64, same shape)."""
    with name_scope(name, "StringToHashBucketFast", [input]) as scope:
        x = convert_to_tensor(input, dtype=dtypes.string)
        return create(
            "StringToHashBucketFast", [x], {"num_buckets": int(num_buckets)}, scope
        ).outputs[0]


def string_to_hash_bucket_strong(input, num_buckets: int, key, name=None):  # noqa: A002
    """Each string's SipHash-2-4 keyed by ``key`` (two ints) modulo ``num_buckets``."""
    with name_scope(name, "StringToHashBucketStrong", [input]) as scope:
        x = convert_to_tensor(input, dtype=dtypes.string)
        attrs = {"num_buckets": int(num_buckets), "key": [int(k) for k in key]}
        return create("StringToHashBucketStrong", [x], attrs, scope).outputs[0]
