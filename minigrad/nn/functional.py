"""Functional forms of the ops, as in `torch.nn.functional` (imported as `F`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from minigrad.engine import (
    ArgumentError,
    Function,
    ShapeError,
    Tensor,
    as_array,
    as_generator,
    broadcasting,
    broadcasts_to,
    cast,
    check_in_range,
    full,
    ops,
    promote,
    reduced_in_float32,
    result_type,
)


def relu(x: Tensor) -> Tensor:
    return ops.ReLU.apply(x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    return ops.GELU.apply(x, approximate=approximate)


def tanh(x: Tensor) -> Tensor:
    return ops.Tanh.apply(x)


def sigmoid(x: Tensor) -> Tensor:
    return ops.Sigmoid.apply(x)


def logsigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)), elementwise, without overflow or -inf for large |x| (as torch's F.logsigmoid)."""
    return ops.LogSigmoid.apply(x)


def exp(x: Tensor) -> Tensor:
    return ops.Exp.apply(x)


def log(x: Tensor) -> Tensor:
    return ops.Log.apply(x)


def sin(x: Tensor) -> Tensor:
    return ops.Sin.apply(x)


def cos(x: Tensor) -> Tensor:
    return ops.Cos.apply(x)


def erf(x: Tensor) -> Tensor:
    return ops.Erf.apply(x)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as PyTorch)."""
    if beta == 0:
        raise ValueError("softplus: beta must be nonzero (it divides), got 0")
    return ops.Softplus.apply(x, beta=float(beta), threshold=float(threshold))


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, negative_slope x elsewhere."""
    return ops.LeakyReLU.apply(x, negative_slope=float(negative_slope))


# ---- more activations, each written with the ops above (their gradients follow from those) ----

def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x where x > 0, alpha (e^x - 1) elsewhere. e^x is taken of min(x, 0): a large x would give
    e^x = inf, and inf times the zero gradient of the branch not taken is NaN."""
    return x.relu() + alpha * (x.clamp(max=0).exp() - 1)


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(x: Tensor) -> Tensor:
    """SELU_SCALE * elu(x, SELU_ALPHA): the constants keep activations near mean 0, variance 1."""
    return SELU_SCALE * elu(x, SELU_ALPHA)


def celu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x where x > 0, alpha (e^(x / alpha) - 1) elsewhere."""
    if alpha == 0:
        raise ArgumentError("celu: alpha must be nonzero (it divides), got 0")
    return x.relu() + alpha * ((x.clamp(max=0) / alpha).exp() - 1)


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """x clipped to [min_val, max_val]. The gradient is G strictly inside and 0 at and beyond the
    bounds (PyTorch's; clamp passes G at a bound), so the clipped side is a constant."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    inside = (x.data > min_val) & (x.data < max_val)
    return where(inside, x, np.clip(x.data, min_val, max_val))


def relu6(x: Tensor) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(x, 0.0, 6.0)


def hardsigmoid(x: Tensor) -> Tensor:
    """relu6(x + 3) / 6: a straight-line sigmoid, 0 below -3 and 1 above 3."""
    return relu6(x + 3) / 6


def hardswish(x: Tensor) -> Tensor:
    """x hardsigmoid(x)."""
    return x * hardsigmoid(x)


def softsign(x: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return x / (1 + x.abs())


def mish(x: Tensor) -> Tensor:
    """x tanh(softplus(x))."""
    return x * softplus(x).tanh()


@reduced_in_float32
def normalize(x: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """x / max(||x||_p, eps) along `dim`: each slice scaled to length 1 (cosine similarity is the
    dot product of two normalized vectors). A slice of zeros stays zeros with a finite gradient:
    its norm's own gradient (0 / 0) is taken as 0, as PyTorch. p=0 counts the nonzero entries
    (a count, with no gradient); p=inf takes the largest |x|."""
    if p == 0:
        norm = (x != 0).sum(dim, keepdim=True).to(x.dtype)
    elif p == float("inf"):
        norm = x.abs().amax(dim, keepdim=True)
    else:
        powered = (x.abs() ** p).sum(dim, keepdim=True)
        zero = powered.data == 0
        norm = where(zero, 0.0, where(zero, 1.0, powered) ** (1 / p))
    return x / norm.clamp(min=eps)


def pad(x: Tensor, pad: Any, mode: str = "constant", value: float = 0.0) -> Tensor:
    """x with `value` added around it: pad = (left, right) for the last axis, then (left, right)
    for the one before it, and so on (torch's order); a negative amount crops instead. Only
    mode="constant"."""
    if mode != "constant":
        raise NotImplementedError(f"pad: mode {mode!r} is not supported; only 'constant'")
    amounts = [int(n) for n in pad]
    if len(amounts) % 2:
        raise ArgumentError(f"pad: pad has {len(amounts)} entries; it needs pairs (left, right) per axis")
    if len(amounts) > 2 * x.ndim:
        raise ArgumentError(f"pad: pad has {len(amounts)} entries, more than 2 per axis of the "
                            f"tensor's shape {x.shape}")
    for i in range(len(amounts) // 2):
        x = _pad_axis(x, x.ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1], value)
    return x


def _pad_axis(x: Tensor, axis: int, before: int, after: int, value: float) -> Tensor:
    size = x.shape[axis] + min(before, 0) + min(after, 0)
    if size < 0:
        raise ShapeError(f"pad: cropping {-min(before, 0)} and {-min(after, 0)} from axis {axis} of "
                         f"shape {x.shape} leaves a negative size")
    x = x.narrow(axis, -min(before, 0), size)  # the crop (the whole axis when nothing is cropped)

    def block(n: int) -> list[Tensor]:
        return [full((*x.shape[:axis], n, *x.shape[axis + 1:]), value, dtype=x.dtype)] if n > 0 else []

    parts = block(before) + [x] + block(after)
    return cat(parts, dim=axis) if len(parts) > 1 else x


def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """min(max(x, min), max), bounds numbers or tensors (torch.clamp); see Tensor.clamp."""
    return x.clamp(min, max)


clip = clamp


def maximum(a: Tensor, b: Any) -> Tensor:
    """The larger of a and b, elementwise (torch.maximum); a tie gives each half the gradient."""
    return a.maximum(b)


def minimum(a: Tensor, b: Any) -> Tensor:
    """The smaller of a and b, elementwise (torch.minimum); a tie gives each half the gradient."""
    return a.minimum(b)


def logsumexp(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return x.logsumexp(dim, keepdim)


def flip(x: Tensor, dims: Any) -> Tensor:
    return x.flip(dims)


def softmax(x: Tensor, axis: int | None = None, *, dim: int | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis` (or PyTorch's `dim`), the last axis by default.
    Entries of -inf get probability exactly 0; a row of only -inf gives NaN, as in PyTorch."""
    return x.softmax(axis, dim=dim)


def softmin(x: Tensor, axis: int | None = None, *, dim: int | None = None) -> Tensor:
    """softmax(-x) along `axis` (or `dim`), the last one by default: the smallest entry gets the
    largest probability (as torch's softmin)."""
    return (-x).softmax(axis, dim=dim)


def log_softmax(x: Tensor, axis: int | None = None, *, dim: int | None = None) -> Tensor:
    return x.log_softmax(axis, dim=dim)


def _join_axis(op: str, axis: int | None, dim: int | None) -> int:
    if axis is not None and dim is not None:
        raise TypeError(f"{op}(): got both axis={axis!r} and dim={dim!r}; they are one argument")
    chosen = dim if axis is None else axis
    return 0 if chosen is None else chosen


def concatenate(tensors: list[Tensor], axis: int | None = None, *, dim: int | None = None) -> Tensor:
    """Join along an existing axis (`axis` or PyTorch's `dim`, default 0)."""
    return _join("concatenate", ops.Concatenate, tensors, _join_axis("concatenate", axis, dim))


def cat(tensors: list[Tensor], dim: int = 0) -> Tensor:
    """torch.cat's name for `concatenate`."""
    return _join("cat", ops.Concatenate, tensors, dim)


def stack(tensors: list[Tensor], axis: int | None = None, *, dim: int | None = None) -> Tensor:
    """Join along a new axis (`axis` or PyTorch's `dim`, default 0)."""
    return _join("stack", ops.Stack, tensors, _join_axis("stack", axis, dim))


def std_mean(x: Tensor, dim: Any = None, *, correction: float | None = None,
             keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """(std, mean) of x over `dim` (torch.std_mean)."""
    return x.std_mean(dim, correction=correction, keepdim=keepdim)


def var_mean(x: Tensor, dim: Any = None, *, correction: float | None = None,
             keepdim: bool = False) -> tuple[Tensor, Tensor]:
    """(var, mean) of x over `dim` (torch.var_mean)."""
    return x.var_mean(dim, correction=correction, keepdim=keepdim)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Grids from 1-D tensors (torch.meshgrid): with indexing="ij", the i-th output has shape
    (len(t0), len(t1), ...) and holds t_i's entry at position i; "xy" swaps the first two axes
    (x along columns, as in plotting). Views that broadcast each tensor, so G sums back."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    vectors = [_as_vector("meshgrid", t) for t in tensors]
    order = [1, 0, *range(2, len(vectors))] if indexing == "xy" and len(vectors) >= 2 else range(len(vectors))
    shape = tuple(vectors[i].shape[0] for i in order)  # "xy": the second tensor's axis comes first
    grids = {i: vectors[i].reshape(*(-1 if d == axis else 1 for d in range(len(shape)))).expand(*shape)
             for axis, i in enumerate(order)}
    return tuple(grids[i] for i in range(len(vectors)))


def _as_vector(who: str, t: Any) -> Tensor:
    if np.ndim(as_array(t)) > 1:
        raise ShapeError(f"{who}: each tensor must be 0-d or 1-D, got shape {np.shape(as_array(t))}")
    return t.reshape(-1) if isinstance(t, Tensor) else Tensor(np.asarray(t).reshape(-1))


def _join(who: str, op: type[Function], tensors: list[Tensor], axis: int) -> Tensor:
    """op on the tensors, in the dtype PyTorch's promotion gives them (numpy's would make float32
    and int64 float64); shapes that do not fit raise a ShapeError naming them all."""
    if len({np.asarray(as_array(t)).dtype for t in tensors}) > 1:
        dtype = result_type(*tensors)
        tensors = [cast(t, dtype) for t in tensors]
    try:
        return op.apply(*tensors, axis=axis)
    except ValueError as error:
        if isinstance(error, IndexError) or len(tensors) < 2:  # an axis out of range; nothing to join
            raise
        shapes = [tuple(np.shape(t)) for t in tensors]
        listed = ", ".join(map(str, shapes[:-1])) + f" and {shapes[-1]}"
        rule = "every tensor must have the same shape" if op is ops.Stack else \
            f"every size but dim {axis}'s must match, and a 0-d tensor has no axis to join along"
        raise ShapeError(f"{who}: shapes {listed} do not fit ({rule})") from None


@reduced_in_float32
def cross_entropy(logits: Tensor, targets: Any, weight: Any = None, *, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """-log softmax(logits)[target], averaged (or summed, or not reduced) over positions.

    The shapes are PyTorch's: logits (N, C) with targets (N,), one unbatched position (C,) with
    a 0-d target, or (N, C, d1, ...) with targets (N, d1, ...): the classes are on axis 1. A
    language model's (B, T, V) logits are therefore passed as `logits.reshape(-1, V)` with
    `targets.reshape(-1)`. targets: int class ids in [0, C), or class probabilities of the
    logits' shape. As PyTorch: `weight` (C,) scales each class's term; positions whose target
    is `ignore_index` add nothing and are not counted by the mean; `label_smoothing` eps aims at
    (1 - eps) y + eps/C; reduction is "mean", "sum" or "none" (one loss per position, shaped as
    the targets). With none of these options the fused op runs, whose d loss / d logits is
    (p - y) / N for reduction="mean".
    """
    logits, targets = classes_last("cross_entropy", logits, targets)
    if reduction in ("mean", "sum") and weight is None and label_smoothing == 0:
        y = np.asarray(as_array(targets))
        if y.dtype.kind in "iu" and not (y == ignore_index).any():
            y = _check_targets("cross_entropy", y, logits.shape, reduction)
            return ops.CrossEntropy.apply(logits, y, reduction=reduction)
    coefficients, divisor = _loss_coefficients("cross_entropy", logits, targets, weight, ignore_index,
                                               reduction, label_smoothing)
    return ops.SoftTargetCrossEntropy.apply(logits, coefficients, reduction=reduction, divisor=divisor)


@reduced_in_float32
def nll_loss(log_probs: Tensor, targets: Any, weight: Any = None, *, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """-log_probs[target] (the input is already log-probabilities, e.g. from log_softmax), with
    cross_entropy's weight, ignore_index, reduction and shapes: log_probs (N, C), (C,) or
    (N, C, d1, ...) with int targets (N,), () or (N, d1, ...)."""
    y = np.asarray(as_array(targets))
    if y.dtype.kind not in "iu":
        raise TypeError(f"nll_loss: targets must be integer class ids, got dtype {y.dtype}")
    log_probs, y = classes_last("nll_loss", log_probs, y)
    coefficients, divisor = _loss_coefficients("nll_loss", log_probs, y, weight, ignore_index, reduction, 0.0)
    return ops.NLLLoss.apply(log_probs, coefficients, reduction=reduction, divisor=divisor)


def classes_last(who: str, logits: Tensor, targets: Any) -> tuple[Tensor, Any]:
    """PyTorch's (N, C, d1, ...) logits with (N, d1, ...) targets as (N, d1, ..., C) and
    (N, d1, ...), the layout the ops compute in (one row of C classes per position). Ranks 0-2
    are returned as they are: their class axis is already the last one. Probability targets
    (the logits' shape) move their class axis too."""
    rank = len(logits.shape)
    if rank < 3:
        return logits, targets
    y_shape, z_shape = tuple(np.shape(as_array(targets))), tuple(logits.shape)
    is_probabilities = np.asarray(as_array(targets)).dtype.kind == "f"
    expected = z_shape if is_probabilities else z_shape[:1] + z_shape[2:]
    if y_shape != expected:
        what = "class probabilities of the input's shape" if is_probabilities else \
            "one class id per position: the input's shape without its class axis 1"
        raise ShapeError(f"{who}: targets has shape {y_shape}, expected {expected} ({what}; input "
                         f"shape {z_shape} is (N, C, d1, ...) with the C={z_shape[1]} classes on "
                         f"axis 1, as in PyTorch; for (B, T, V) logits pass logits.reshape(-1, V) "
                         f"and targets.reshape(-1))")
    order = (0, *range(2, rank), 1)
    if is_probabilities:
        targets = targets.permute(order) if isinstance(targets, Tensor) else \
            np.moveaxis(np.asarray(as_array(targets)), 1, -1)
    return logits.permute(order), targets


def _loss_coefficients(who: str, logits: Tensor, targets: Any, weight: Any, ignore_index: int,
                       reduction: str, label_smoothing: float) -> tuple[Any, float]:
    """(A, divisor) for ops/losses.py: the loss at position i is -sum_c A_ic log p_ic, and the
    mean divides by divisor. Every argument is checked here, with its name in the message."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{who}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{who}: label_smoothing must be in [0, 1], got {label_smoothing!r}")
    z_shape, dtype = logits.shape, logits.dtype
    if len(z_shape) == 0:
        raise ShapeError(f"{who}: input must have a class axis, got a 0-d tensor")
    classes = z_shape[-1]
    w = np.ones(classes, dtype) if weight is None else np.asarray(as_array(weight), dtype=dtype)
    if w.shape != (classes,):
        raise ShapeError(f"{who}: weight has shape {w.shape}, expected ({classes},) (one per class)")
    y = np.asarray(as_array(targets))
    if y.dtype.kind == "f":  # class probabilities, one row per position
        if y.shape != z_shape:
            raise ShapeError(f"{who}: float targets are class probabilities, of the input's shape "
                             f"{z_shape}, but these have shape {y.shape} (class ids must be integers)")
        # a Tensor of targets stays one, so a gradient reaches whatever computed it
        soft = targets if isinstance(targets, Tensor) else y.astype(dtype)
        aim = soft * (1 - label_smoothing) + label_smoothing / classes
        return aim * w, float(np.prod(z_shape[:-1], dtype=np.int64))
    if y.dtype.kind not in "iu":
        raise TypeError(f"{who}: targets must be integer class ids or float class probabilities, "
                        f"got dtype {y.dtype}")
    if y.shape != z_shape[:-1]:
        raise ShapeError(f"{who}: targets has shape {y.shape}, expected {z_shape[:-1]} (input shape "
                         f"{z_shape} without its last, class axis)")
    counted = y != ignore_index
    check_in_range(np.where(counted, y, 0), classes, who=who, item="target", name="targets",
                   range_of=f"{classes} classes (or ignore_index={ignore_index})")
    ids = np.where(counted, y, 0)[..., None]
    onehot = np.zeros(z_shape, dtype)
    np.put_along_axis(onehot, ids, 1, axis=-1)
    aim = onehot * (1 - label_smoothing) + label_smoothing / classes
    coefficients = aim * w * counted[..., None]
    # PyTorch's mean divides by the weight of the targets counted (their number without weights)
    divisor = float((np.take_along_axis(np.broadcast_to(w, z_shape), ids, axis=-1)[..., 0] * counted).sum())
    return coefficients, divisor


@reduced_in_float32
def binary_cross_entropy(input: Tensor, target: Any, weight: Any = None, reduction: str = "mean") -> Tensor:
    """-w (y log p + (1 - y) log(1 - p)) for each entry, averaged (or summed, or not reduced).

    input: probabilities p in [0, 1], any shape; target: y of the same shape (floats in [0, 1]; a
    tensor of them gets a gradient too); weight: broadcasts to input's shape. As PyTorch, each
    log is clamped at -100. For logits, `binary_cross_entropy_with_logits` is exact where the
    sigmoid would round to 0 or 1.
    """
    p, y, w = _binary_operands("binary_cross_entropy", input, target, weight, reduction)
    probabilities = as_array(p)
    if ((probabilities < 0) | (probabilities > 1)).any():
        raise ValueError("binary_cross_entropy: every entry of input must be a probability in [0, 1] "
                         "(pass logits to binary_cross_entropy_with_logits)")
    return ops.BCE.apply(p, y, w, reduction=reduction)


@reduced_in_float32
def binary_cross_entropy_with_logits(input: Tensor, target: Any, weight: Any = None, reduction: str = "mean",
                                     pos_weight: Any = None) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target), computed from the logits without overflow.

    input: logits x, any shape; target: y of the same shape; weight: broadcasts to x's shape;
    pos_weight: multiplies the positive term -y log s(x), broadcasting along the last axis (one
    per class), as PyTorch. weight and pos_weight get no gradient.
    """
    x, y, w = _binary_operands("binary_cross_entropy_with_logits", input, target, weight, reduction)
    pw = np.ones((), x.dtype) if pos_weight is None else np.asarray(as_array(pos_weight), x.dtype)
    _check_broadcasts_to("binary_cross_entropy_with_logits", "pos_weight", pw.shape, x.shape)
    return ops.BCEWithLogits.apply(x, y, w, pw, reduction=reduction)


def _binary_operands(who: str, input: Tensor, target: Any, weight: Any,
                     reduction: str) -> tuple[Any, Any, Any]:
    """(input, target, weight) for the binary losses, in the dtype PyTorch's promotion gives input
    and target: the target of input's shape (a tensor stays one, so it can get a gradient), the
    weight an array that broadcasts to it."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{who}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if not isinstance(input, Tensor) or input.dtype.kind != "f":
        raise TypeError(f"{who}: input must be a float tensor, got {type(input).__name__} of dtype "
                        f"{getattr(input, 'dtype', None)}")
    y_shape = tuple(np.shape(as_array(target)))
    if y_shape != input.shape:
        raise ShapeError(f"{who}: target has shape {y_shape}, expected the input's shape {input.shape} "
                         "(one target per entry)")
    dtype = result_type(input, target)  # as PyTorch: float32 logits with float64 targets give float64
    if dtype.kind != "f":
        dtype = input.dtype
    x, y = cast(input, dtype), cast(target, dtype)
    w = np.ones((), dtype) if weight is None else np.asarray(as_array(weight), dtype)
    _check_broadcasts_to(who, "weight", w.shape, input.shape)
    return x, y, w


def _check_broadcasts_to(who: str, name: str, shape: tuple[int, ...], into: tuple[int, ...]) -> None:
    if not broadcasts_to(shape, into):
        raise ShapeError(f"{who}: {name} has shape {tuple(shape)}, which does not broadcast to the "
                         f"input's shape {tuple(into)}")


def linear_cross_entropy(x: Tensor, weight: Tensor, targets: Any, bias: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """cross_entropy(linear(x, weight, bias), targets) as one op, for a classifier whose logits
    nothing else reads (a language model's head, tied or not).

    x: (..., in) float; weight: (C, in); bias: (C,) or None; targets: (...) int in [0, C).
    Every leading axis of x counts positions: for x (B, T, in) this is the cross_entropy of the
    logits as (B*T, C) rows with targets.reshape(-1).
    The same loss and gradients (bit for bit when the loss is backpropagated with G = 1), with
    one (N, C) array where the two ops keep two: the forward turns the logits into their
    gradient (p - y) / N in place. The logits are not returned; compute them with `linear` when
    you want to look at them.
    """
    _check_linear_shapes("linear_cross_entropy", x, weight, bias)
    y = _check_targets("linear_cross_entropy", targets, (*x.shape[:-1], weight.shape[0]), reduction)
    return ops.LinearCrossEntropy.apply(x, weight, bias, y, reduction=reduction)


def _check_targets(who: str, targets: Any, z_shape: tuple[int, ...], reduction: str) -> np.ndarray:
    """targets as int64 class ids for logits of shape z_shape, after checking every argument."""
    if reduction not in ("mean", "sum"):
        raise ValueError(f"{who}: reduction must be 'mean' or 'sum', got {reduction!r}")
    y = np.asarray(as_array(targets))
    if y.dtype.kind not in "iu":
        raise TypeError(f"{who}: targets must be integer class ids, got dtype {y.dtype}")
    if len(z_shape) == 0 or y.shape != z_shape[:-1]:
        raise ShapeError(
            f"{who}: targets has shape {y.shape}, expected {z_shape[:-1]} "
            f"(logits shape {z_shape} without its last, class axis)"
        )
    check_in_range(y, z_shape[-1], who=who, item="target", name="targets",
                   range_of=f"{z_shape[-1]} classes")
    return y.astype(np.int64, copy=False)


def linear(x: Any, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x W^T + b.  x: (..., in) -> (..., out); weight: (out, in); bias: (out,) or None."""
    _check_linear_shapes("linear", x, weight, bias)
    return ops.Linear.apply(x, weight, bias)


def _check_linear_shapes(who: str, x: Any, weight: Tensor, bias: Tensor | None) -> None:
    if len(weight.shape) != 2:
        raise ShapeError(f"{who}: weight has shape {weight.shape}, expected a 2-D (out_features, "
                         f"in_features) matrix")
    out_features, in_features = weight.shape
    if len(x.shape) == 0 or x.shape[-1] != in_features:
        raise ShapeError(
            f"{who}: input has shape {x.shape}, but its last dim must be in_features="
            f"{in_features} (weight shape {weight.shape})"
        )
    if bias is not None and bias.shape != (out_features,):
        raise ShapeError(f"{who}: bias has shape {bias.shape}, expected ({out_features},) "
                         f"(one entry per output feature; weight shape {weight.shape})")


MAX_ID_RANK = 2


def embedding(ids: Any, weight: Tensor, padding_idx: int | None = None, *, sparse: bool = True) -> Tensor:
    """weight[ids]: a token id -> (d,), (T,) -> (T, d), (B, T) -> (B, T, d).

    weight: (num_embeddings, d). The weight's gradient is a RowSparse of the rows read
    (`sparse=False`: the dense (V, d) array, for comparison). Rows equal to `padding_idx` get
    no gradient. Unlike PyTorch, ids of rank above 2 are refused (see `check_ids`), and
    sparse=True is the default, because row sparsity is what this library is about.
    """
    if len(weight.shape) != 2:
        raise ShapeError(f"embedding: weight has shape {weight.shape}, expected a 2-D "
                         f"(num_embeddings, embedding_dim) table")
    num_embeddings = weight.shape[0]
    ids = check_ids(ids, num_embeddings)
    padding_idx = check_padding_idx(padding_idx, num_embeddings)
    return ops.Embedding.apply(weight, ids, sparse=sparse, padding_idx=padding_idx)


def check_ids(ids: Any, num_embeddings: int) -> np.ndarray:
    """Token ids as an int64 array, or an error naming the offending id and where it is.

    Ranks 0, 1 and 2 (one id, a sequence (T,), a batch (B, T)) are accepted. A higher rank is
    refused: the usual cause is one-hot rows or already-embedded vectors passed as ids, which
    an integer lookup would silently turn into a (..., V, d) or (..., d, d) tensor.
    """
    if isinstance(ids, (list, tuple)) and np.size(ids) == 0:
        ids = np.zeros(np.shape(ids), dtype=np.int64)  # np.asarray([]) would be float64
    array = ids.data if isinstance(ids, Tensor) else np.asarray(ids)
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"embedding: ids must be integer token ids, got dtype {array.dtype}; "
            "convert with ids.astype(np.int64)"
        )
    if array.ndim > MAX_ID_RANK:
        raise ValueError(
            f"embedding: ids has shape {array.shape} (rank {array.ndim}), expected rank 0, 1 or "
            f"{MAX_ID_RANK}: one id, (T,) or (B, T); one-hot rows? pass their argmax(-1) instead"
        )
    check_in_range(array, num_embeddings, who="embedding", item="token id", name="ids",
                   range_of=f"num_embeddings={num_embeddings}")
    return array.astype(np.int64, copy=False)


def check_padding_idx(padding_idx: Any, num_embeddings: int) -> int | None:
    """padding_idx as a row in [0, V) (negative counts from the end, as in PyTorch), or None."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, (bool, np.bool_)) or not isinstance(padding_idx, (int, np.integer)):
        raise TypeError(f"embedding: padding_idx must be an int row id or None, got {padding_idx!r}")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"embedding: padding_idx={padding_idx} is out of range for "
                         f"num_embeddings={num_embeddings} (expected -{num_embeddings} <= "
                         f"padding_idx < {num_embeddings})")
    return int(padding_idx) % num_embeddings


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """(...) int class ids -> (..., num_classes) int64 rows, 1 at each id (as PyTorch's one_hot;
    num_classes=-1 takes the largest id + 1). No gradient: ids are not differentiable."""
    ids = np.asarray(as_array(tensor))
    if ids.dtype.kind not in "iu":
        raise TypeError(f"one_hot: ids must be integers, got dtype {ids.dtype}")
    if num_classes == -1:
        num_classes = int(ids.max()) + 1 if ids.size else 0
    if num_classes < 0:
        raise ValueError(f"one_hot: num_classes must be -1 (from the ids) or >= 0, got {num_classes}")
    check_in_range(ids, num_classes, who="one_hot", item="class id", name="tensor",
                   range_of=f"num_classes={num_classes}")
    return Tensor((np.arange(num_classes) == ids[..., None]).astype(np.int64))


# ---- transformer pieces (TinyGPT) -------------------------------------------------------------

def where(condition: Any, a: Any, b: Any) -> Tensor:
    """a where condition is True, else b; all three broadcast. Gradient flows to the chosen side."""
    cond = np.asarray(as_array(condition))
    if cond.dtype != np.bool_:
        raise TypeError(f"where: condition must be a bool array, got dtype {cond.dtype}")
    return broadcasting(ops.Where, "where", cond, *promote(a, b))  # a and b in one dtype, by PyTorch's rules


@reduced_in_float32
def layer_norm(x: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing `normalized_shape` axes, then scale by weight and shift by bias.

    x: (..., *normalized_shape); weight, bias: normalized_shape or None. Variance is the biased
    one (divide by n), as in PyTorch.
    """
    shape = _normalized_shape("layer_norm", x, normalized_shape, eps, weight=weight, bias=bias)
    if len(shape) == 1:
        return ops.LayerNorm.apply(x, weight, bias, eps=float(eps))
    flat = (-1,)  # several normalised axes: normalise them as one
    lead = tuple(x.shape[:-len(shape)])
    out = ops.LayerNorm.apply(x.reshape(lead + flat), None if weight is None else weight.reshape(flat),
                              None if bias is None else bias.reshape(flat), eps=float(eps))
    return out.reshape(x.shape)


def _normalized_shape(who: str, x: Tensor, normalized_shape: Any, eps: float,
                      **params: Tensor | None) -> tuple[int, ...]:
    """normalized_shape as a tuple, after checking that it is x's trailing axes, that each of
    `params` (weight, bias) has that shape, and that eps is positive."""
    single = isinstance(normalized_shape, (int, np.integer))
    shape = (int(normalized_shape),) if single else tuple(normalized_shape)
    if not shape or tuple(x.shape[-len(shape):]) != shape or len(shape) > len(x.shape):
        raise ShapeError(f"{who}: input has shape {x.shape}, but normalized_shape={shape} must "
                         f"be its trailing axes")
    for name, p in params.items():
        if p is not None and tuple(p.shape) != shape:
            raise ShapeError(f"{who}: {name} has shape {p.shape}, expected normalized_shape {shape}")
    if not eps > 0:
        raise ValueError(f"{who}: eps must be positive, got {eps!r}")
    return shape


def dropout(x: Tensor, p: float = 0.5, training: bool = True, rng: Any = None) -> Tensor:
    """Zero each entry with probability p and scale the rest by 1 / (1 - p); x itself when not
    training or p == 0. rng: a seed or numpy Generator (the same seed drops the same entries)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be a probability in [0, 1], got {p!r}")
    if not training or p == 0.0:
        return x
    g = as_generator(rng, "dropout")
    keep = g.random(x.shape) >= p
    scale = np.asarray(0.0 if p == 1.0 else 1.0 / (1.0 - p), dtype=x.dtype)
    return x * (keep * scale)


@reduced_in_float32
def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False, *,
                                 rng: Any = None) -> Tensor:
    """softmax(q k^T * scale + mask) v, scale = 1/sqrt(e) by default, as in PyTorch.

    q: (..., L, e), k: (..., S, e), v: (..., S, ev) -> (..., L, ev), any number of leading axes
    (the same for all three). attn_mask broadcasts to (..., L, S): bool (True: the query may
    attend to that key) or float (added to the scores; it gets a gradient if it requires one).
    is_causal: query i sees keys j <= i (not together with attn_mask, as in PyTorch). A query
    that may see no key gets zeros. dropout_p drops attention weights (training only: pass 0 in
    eval); rng seeds it. The same as `(q @ k.transpose(-2, -1) * scale + mask).softmax(-1) @ v`,
    in one op. enable_gqa: k and v may have fewer heads (axis -3) than q, each then shared by a
    group of q's heads (grouped-query attention, as PyTorch: k's head i serves q's heads
    i * g ... i * g + g - 1).
    """
    who = "scaled_dot_product_attention"
    if enable_gqa and q.ndim >= 3:
        k, v = (_heads_shared(who, name, t, q.shape[-3]) for name, t in (("k", k), ("v", v)))
    _check_attention_shapes(who, q, k, v)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{who}: dropout_p must be a probability in [0, 1], got {dropout_p!r}")
    if attn_mask is not None:
        if is_causal:
            raise ArgumentError(f"{who}: pass attn_mask or is_causal=True, not both (as PyTorch); for "
                             "a causal mask combined with your own, put both in attn_mask")
        attn_mask = _check_attention_mask(who, attn_mask, (*q.shape[:-1], k.shape[-2]))
    generator = as_generator(rng, who) if dropout_p > 0 else None
    return ops.ScaledDotProductAttention.apply(q, k, v, attn_mask, dropout_p=float(dropout_p),
                                               is_causal=bool(is_causal), scale=scale, rng=generator)


def _check_attention_shapes(who: str, q: Tensor, k: Tensor, v: Tensor) -> None:
    if len(q.shape) < 2 or len(k.shape) != len(q.shape) or len(v.shape) != len(q.shape):
        raise ShapeError(f"{who}: q, k, v must have the same rank >= 2, got shapes {q.shape}, "
                         f"{k.shape}, {v.shape}")
    if k.shape[-1] != q.shape[-1] or k.shape[-2] != v.shape[-2] or q.shape[:-2] != k.shape[:-2] \
            or k.shape[:-2] != v.shape[:-2]:
        raise ShapeError(f"{who}: shapes q {q.shape}, k {k.shape}, v {v.shape} do not fit "
                         "(expected (..., L, e), (..., S, e), (..., S, ev))")


def _heads_shared(who: str, name: str, t: Tensor, query_heads: int) -> Tensor:
    """k or v with each of its heads repeated for the group of query heads it serves."""
    heads = t.shape[-3] if t.ndim >= 3 else 0
    if heads == 0 or query_heads % heads:
        raise ShapeError(f"{who}: with enable_gqa, {name}'s {heads} heads (axis -3 of shape {t.shape}) "
                         f"must divide q's {query_heads} heads")
    return t.repeat_interleave(query_heads // heads, dim=-3)


def _check_attention_mask(who: str, attn_mask: Any, scores_shape: tuple[int, ...]) -> Any:
    """attn_mask as a bool or float array (a float Tensor stays one: it may need a gradient)."""
    mask = attn_mask if isinstance(attn_mask, Tensor) and attn_mask.dtype.kind == "f" \
        else np.asarray(as_array(attn_mask))
    if mask.dtype.kind not in "bf":
        raise TypeError(f"{who}: attn_mask must be bool (True: may attend) or float (added to "
                        f"the scores), got dtype {mask.dtype}")
    if not broadcasts_to(mask.shape, scores_shape):
        raise ShapeError(f"{who}: attn_mask has shape {tuple(mask.shape)}, which does not broadcast "
                         f"to the scores' shape {scores_shape} (..., L, S)")
    return mask


# ---- the Llama-style model's pieces -------------------------------------------------------------

def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x), elementwise (also called swish)."""
    return ops.SiLU.apply(x)


@reduced_in_float32
def rms_norm(x: Tensor, normalized_shape: Any, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the trailing `normalized_shape` axes, as PyTorch.

    x: (..., *normalized_shape); weight: normalized_shape or None; eps: PyTorch's default is the
    machine epsilon of the dtype it computes in: x's, or float32's for a float16 x, which is
    computed in float32 (Llama passes its own eps, 1e-5 or 1e-6).
    """
    eps = float(np.finfo(x.dtype).eps) if eps is None else eps
    shape = _normalized_shape("rms_norm", x, normalized_shape, eps, weight=weight)
    if len(shape) == 1:
        return ops.RMSNorm.apply(x, weight, eps=float(eps))
    lead = tuple(x.shape[:-len(shape)])  # several normalised axes: normalise them as one
    out = ops.RMSNorm.apply(x.reshape(lead + (-1,)), None if weight is None else weight.reshape(-1),
                            eps=float(eps))
    return out.reshape(x.shape)


def rotary_angles(positions: Any, dim: int, theta: float = 10000.0,
                  dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of the rotary angles, each (..., T, dim/2) for positions (..., T) int.

    Pair i of a position p turns by p * theta^(-2i/dim): the first pairs fast, the last slowly,
    so nearby positions differ in the first and far ones in the last. Computed in float64, then
    given x's dtype.
    """
    if dim % 2 or dim <= 0:
        raise ValueError(f"rotary: the rotated dimension must be even and positive (pairs), got {dim}")
    if not theta > 0:
        raise ValueError(f"rotary: theta must be positive, got {theta!r}")
    pos = np.asarray(as_array(positions))
    if pos.dtype.kind not in "iu" or pos.ndim == 0:
        raise TypeError(f"rotary: positions must be integer positions of shape (..., T), got dtype "
                        f"{pos.dtype} and shape {pos.shape}")
    frequencies = float(theta) ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)  # (dim/2,)
    angles = pos[..., None].astype(np.float64) * frequencies
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def rotary_embedding(x: Tensor, positions: Any = None, theta: float = 10000.0,
                     style: str = "halves") -> Tensor:
    """Rotary position embedding: x (..., T, d) with each pair of its last axis turned by an
    angle that grows with the position (positions: (..., T) int, default 0..T-1).

    style="halves" pairs entry i with entry i + d/2, as Llama in transformers (`rotate_half`)
    and GPT-NeoX; style="pairs" pairs entries 2i and 2i + 1, as the RoPE paper, Meta's Llama
    code and CS336. The two give the same attention scores when q's and k's projection rows are
    permuted accordingly; a checkpoint must be read with the style it was trained with.
    positions broadcast against x's leading axes: for x (B, h, T, d) pass (T,) or (B, 1, T).
    """
    if len(x.shape) < 2:
        raise ShapeError(f"rotary_embedding: x has shape {x.shape}, expected (..., T, d)")
    T, d = x.shape[-2:]
    cos, sin = rotary_angles(np.arange(T) if positions is None else positions, d, theta, x.dtype)
    return rotate_pairs(x, cos, sin, style)


def rotate_pairs(x: Tensor, cos: np.ndarray, sin: np.ndarray, style: str = "halves") -> Tensor:
    """x (..., T, d) with each pair of its last axis turned by the angles whose cos and sin are
    given, (..., T, d/2) (from `rotary_angles`): rotary_embedding with the angles computed once."""
    if style not in ops.Rotary.styles:
        raise ValueError(f"rotary_embedding: style must be one of {ops.Rotary.styles}, got {style!r}")
    if len(x.shape) < 2 or x.shape[-1] % 2:
        raise ShapeError(f"rotary_embedding: x has shape {x.shape}, expected (..., T, d) with d even")
    pairs = (*x.shape[:-1], x.shape[-1] // 2)
    if not broadcasts_to(cos.shape, pairs):  # the angles stretch to x, not x to them
        raise ShapeError(f"rotary_embedding: positions of shape {cos.shape[:-1]} do not fit x of "
                         f"shape {x.shape} (expected (..., T) broadcasting to {x.shape[:-1]})")
    return ops.Rotary.apply(x, cos, sin, style=style)
