"""Optimizer update ops: one fused kernel per optimizer step of one variable.

Each op takes references to the variable and its slots, updates them, and returns the
variable's reference. A kernel updates arrays in place only when nothing else holds them
(``_exclusive``): then no reader can observe the change; otherwise it stores new arrays.
"""

from __future__ import annotations

import sys

from engine import errors
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.ops._common import FLOATS

_getrefcount = sys.getrefcount
# References to a slot's array while a kernel holds it in one local: the slot attribute, the
# local name and getrefcount's own argument.
_OWNED_REFS = 3


def _exclusive(arr) -> bool:
    return _getrefcount(arr) <= _OWNED_REFS


def _apply_infer(n_refs: int, what: str, grad_index: int = -1):
    def infer(o):
        refs = o._inputs[:n_refs]
        var = refs[0]
        for r in refs:
            if not r._dtype._is_ref:
                raise TypeError(
                    f"{what} requires variable (reference) inputs; {r.name} has "
                    f"dtype {r._dtype.name}"
                )
        d = var._dtype.base_dtype
        if d not in FLOATS:
            raise TypeError(f"{what} updates floating point variables, not {d.name}")
        for t in o._inputs:
            if t._dtype.base_dtype is not d:
                raise TypeError(
                    f"Input {t.name} of {what} has type {t._dtype.base_dtype.name} "
                    f"that does not match type {d.name} of the variable"
                )
        grad = o._inputs[grad_index]
        if not var._shape.is_compatible_with(grad._shape):
            raise ShapeError(
                f"var and grad do not have the same shape: {var._shape} vs {grad._shape}"
            )
        return [(var._dtype, var._shape)]

    return infer


def _check_grad(var_value, grad):
    if var_value.shape != grad.shape:
        raise errors.InvalidArgumentError(
            None,
            None,
            f"var and grad do not have the same shape {list(var_value.shape)} {list(grad.shape)}",
        )


def _read(ref):
    return ref.read()


@op(
    "ApplyGradientDescent",
    infer=_apply_infer(1, "ApplyGradientDescent"),
    differentiable=False,
    inputs=("var", "alpha", "delta"),
    attrs=(Attr("use_locking", "bool"),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0,)),
)
def _apply_gradient_descent(xp, var, alpha, delta, *, use_locking):
    w = _read(var)
    _check_grad(w, delta)
    if _exclusive(w):
        w -= alpha * delta
    else:
        var.value = w - alpha * delta
    return var


@op(
    "ApplyMomentum",
    infer=_apply_infer(2, "ApplyMomentum", grad_index=3),
    differentiable=False,
    inputs=("var", "accum", "lr", "grad", "momentum"),
    attrs=(
        Attr("use_locking", "bool"),
        Attr("use_nesterov", "bool"),
    ),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1)),
)
def _apply_momentum(xp, var, accum, lr, grad, momentum, *, use_locking, use_nesterov):
    w, a = _read(var), _read(accum)
    _check_grad(w, grad)
    a_new = a * momentum + grad
    accum.value = a_new
    step = (grad * lr + a_new * (lr * momentum)) if use_nesterov else a_new * lr
    if _exclusive(w):
        w -= step
    else:
        var.value = w - step
    return var


@op(
    "ApplyAdam",
    infer=_apply_infer(3, "ApplyAdam"),
    differentiable=False,
    inputs=(
        "var",
        "m",
        "v",
        "beta1_power",
        "beta2_power",
        "lr",
        "beta1",
        "beta2",
        "epsilon",
        "grad",
    ),
    attrs=(
        Attr("use_locking", "bool"),
        Attr("use_nesterov", "bool"),
    ),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1, 2)),
)
def _apply_adam(
    xp,
    var,
    m,
    v,
    beta1_power,
    beta2_power,
    lr,
    beta1,
    beta2,
    epsilon,
    grad,
    *,
    use_locking,
    use_nesterov,
):
    w, mv, vv = _read(var), _read(m), _read(v)
    _check_grad(w, grad)
    one = w.dtype.type(1)
    lr_t = lr * xp.sqrt(one - beta2_power) / (one - beta1_power)
    if _exclusive(mv):
        mv *= beta1
        mv += (one - beta1) * grad
    else:
        mv = beta1 * mv + (one - beta1) * grad
        m.value = mv
    g2 = grad * grad
    if _exclusive(vv):
        vv *= beta2
        g2 *= one - beta2
        vv += g2
    else:
        vv = beta2 * vv + (one - beta2) * g2
        v.value = vv
    denom = xp.sqrt(vv)
    denom += epsilon
    num = (mv * beta1 + (one - beta1) * grad) if use_nesterov else mv * lr_t
    if use_nesterov:
        num *= lr_t
    num /= denom
    if _exclusive(w):
        w -= num
    else:
        var.value = w - num
    return var


@op(
    "ApplyAdagrad",
    infer=_apply_infer(2, "ApplyAdagrad"),
    differentiable=False,
    inputs=("var", "accum", "lr", "grad"),
    attrs=(
        Attr("use_locking", "bool"),
        Attr("update_slots", "bool"),
    ),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1)),
)
def _apply_adagrad(xp, var, accum, lr, grad, *, use_locking, update_slots):
    w, a = _read(var), _read(accum)
    _check_grad(w, grad)
    if update_slots:
        a = a + grad * grad
        accum.value = a
    step = grad * lr / xp.sqrt(a)
    if _exclusive(w):
        w -= step
    else:
        var.value = w - step
    return var


@op(
    "ApplyRMSProp",
    infer=_apply_infer(3, "ApplyRMSProp"),
    differentiable=False,
    inputs=("var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"),
    attrs=(Attr("use_locking", "bool"),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1, 2)),
)
def _apply_rmsprop(xp, var, ms, mom, lr, rho, momentum, epsilon, grad, *, use_locking):
    w, msv, momv = _read(var), _read(ms), _read(mom)
    _check_grad(w, grad)
    one = w.dtype.type(1)
    msv = msv + (grad * grad - msv) * (one - rho)
    ms.value = msv
    momv = momv * momentum + grad * lr / xp.sqrt(msv + epsilon)
    mom.value = momv
    if _exclusive(w):
        w -= momv
    else:
        var.value = w - momv
    return var


@op(
    "ApplyCenteredRMSProp",
    infer=_apply_infer(4, "ApplyCenteredRMSProp"),
    differentiable=False,
    inputs=("var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"),
    attrs=(Attr("use_locking", "bool"),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1, 2, 3)),
)
def _apply_centered_rmsprop(xp, var, mg, ms, mom, lr, rho, momentum, epsilon, grad, *, use_locking):
    w, mgv, msv, momv = _read(var), _read(mg), _read(ms), _read(mom)
    _check_grad(w, grad)
    one = w.dtype.type(1)
    msv = msv + (grad * grad - msv) * (one - rho)
    mgv = mgv + (grad - mgv) * (one - rho)
    ms.value, mg.value = msv, mgv
    momv = momv * momentum + grad * lr / xp.sqrt(msv - mgv * mgv + epsilon)
    mom.value = momv
    if _exclusive(w):
        w -= momv
    else:
        var.value = w - momv
    return var


@op(
    "ApplyAdadelta",
    infer=_apply_infer(3, "ApplyAdadelta"),
    differentiable=False,
    inputs=("var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"),
    attrs=(Attr("use_locking", "bool", default=False),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1, 2)),
)
def _apply_adadelta(xp, var, accum, accum_update, lr, rho, epsilon, grad, *, use_locking=False):
    w, a, au = _read(var), _read(accum), _read(accum_update)
    _check_grad(w, grad)
    one = w.dtype.type(1)
    a = a * rho + grad * grad * (one - rho)
    update = xp.sqrt(au + epsilon) * (one / xp.sqrt(a + epsilon)) * grad
    accum.value = a
    var.value = w - update * lr
    accum_update.value = au * rho + update * update * (one - rho)
    return var


@op(
    "ApplyProximalGradientDescent",
    infer=_apply_infer(1, "ApplyProximalGradientDescent"),
    differentiable=False,
    inputs=("var", "alpha", "l1", "l2", "delta"),
    attrs=(Attr("use_locking", "bool", default=False),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0,)),
)
def _apply_proximal_gradient_descent(xp, var, alpha, l1, l2, delta, *, use_locking=False):
    w = _read(var)
    _check_grad(w, delta)
    _check_proximal(alpha, l1, l2, values=False)
    var.value = _fobos(xp, w - delta * alpha, alpha, l1, l2)
    return var


def _check_proximal(lr, l1, l2, values: bool = True) -> None:
    """TF's checks of the proximal kernels: scalar hyper-parameters, and (ProximalAdagrad's
    kernel, not ProximalGradientDescent's) lr > 0 and l1, l2 >= 0."""
    for name, v in (("lr", lr), ("l1 regularization strength", l1), ("l2", l2)):
        if getattr(v, "ndim", 0) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"{name} is not a scalar: {list(v.shape)}"
            )
    if not values:
        return
    if not lr > 0:
        raise errors.InvalidArgumentError(None, None, f"lr is not a positive scalar: {lr}")
    if not l1 >= 0:
        raise errors.InvalidArgumentError(
            None, None, f"l1 regularization strength is not a non-negative scalar: {l1}"
        )
    if not l2 >= 0:
        raise errors.InvalidArgumentError(
            None, None, f"l2 regularization strength is not a non-negative scalar: {l2}"
        )


def _fobos(xp, prox, lr, l1, l2):
    """The forward-backward splitting step after the gradient step ``prox``: the l1
    soft threshold ``lr * l1`` (when ``l1 > 0``), then the l2 shrinkage ``1 + l2 * lr``."""
    one = prox.dtype.type(1)
    if l1 > 0:
        shrunk = xp.maximum(xp.abs(prox) - lr * l1, prox.dtype.type(0))
        return xp.sign(prox) * shrunk / (one + l2 * lr)
    return prox / (one + l2 * lr)


@op(
    "ApplyProximalAdagrad",
    infer=_apply_infer(2, "ApplyProximalAdagrad"),
    differentiable=False,
    inputs=("var", "accum", "lr", "l1", "l2", "grad"),
    attrs=(Attr("use_locking", "bool", default=False),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1)),
)
def _apply_proximal_adagrad(xp, var, accum, lr, l1, l2, grad, *, use_locking=False):
    w, a = _read(var), _read(accum)
    _check_grad(w, grad)
    _check_proximal(lr, l1, l2)
    a = a + grad * grad
    accum.value = a
    adagrad_lr = lr * (w.dtype.type(1) / xp.sqrt(a))
    var.value = _fobos(xp, w - grad * adagrad_lr, adagrad_lr, l1, l2)
    return var


def _ftrl(xp, var, accum, linear, grad, lr, l1, l2, lr_power, shrinkage=None):
    """The FTRL-proximal step of ApplyFtrl (and, with ``shrinkage``, ApplyFtrlV2): ``linear``
    gathers the gradient (plus ``2 * shrinkage * var``) less the change of the per-coordinate
    step size times ``var``; ``var`` is the closed-form minimiser, zero where ``|linear| <= l1``;
    ``accum`` gathers ``grad**2`` last."""
    w, a, lin = _read(var), _read(accum), _read(linear)
    _check_grad(w, grad)
    two = w.dtype.type(2)
    new_a = a + grad * grad
    if lr_power == w.dtype.type(-0.5):
        new_power, old_power = xp.sqrt(new_a), xp.sqrt(a)
    else:
        new_power, old_power = xp.power(new_a, -lr_power), xp.power(a, -lr_power)
    g = grad if shrinkage is None else grad + two * shrinkage * w
    lin = lin + (g - (new_power - old_power) / lr * w)
    linear.value = lin
    # (kernels run under the session's numpy errstate(all="ignore"); cupy has no errstate)
    pre_shrink = (l1 * xp.sign(lin) - lin) / (new_power / lr + two * l2)
    var.value = xp.where(xp.abs(lin) > l1, pre_shrink, w.dtype.type(0)).astype(w.dtype)
    accum.value = new_a
    return var


@op(
    "ApplyFtrl",
    infer=_apply_infer(3, "ApplyFtrl", grad_index=3),
    differentiable=False,
    inputs=("var", "accum", "linear", "grad", "lr", "l1", "l2", "lr_power"),
    attrs=(Attr("use_locking", "bool", default=False),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1, 2)),
)
def _apply_ftrl(xp, var, accum, linear, grad, lr, l1, l2, lr_power, *, use_locking=False):
    return _ftrl(xp, var, accum, linear, grad, lr, l1, l2, lr_power)


@op(
    "ApplyFtrlV2",
    infer=_apply_infer(3, "ApplyFtrlV2", grad_index=3),
    differentiable=False,
    inputs=("var", "accum", "linear", "grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power"),
    attrs=(Attr("use_locking", "bool", default=False),),
    flags=OpFlags(stateful=True, writes_variables=True, ref_inputs=(0, 1, 2)),
)
def _apply_ftrl_v2(
    xp, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, *, use_locking=False
):
    return _ftrl(xp, var, accum, linear, grad, lr, l1, l2, lr_power, shrinkage=l2_shrinkage)
