"""The differentiable ops, one `Function` each: forward and backward side by side, by family.

    vocabulary.py   Embedding, Linear, Softmax, LogSoftmax, CrossEntropy (lessons 3-6: read first)
    arithmetic.py   Add, Sub, Mul, Div, Pow, Neg, Clone, Copy, MatMul, and `unbroadcast`;
                    RoundedDivide, Remainder
    reductions.py   Sum, Mean, Max; Min, Prod, LogSumExp, Var, Cumsum
    elementwise.py  Exp, Log, Tanh, Sigmoid, LogSigmoid, ReLU, GELU, Sqrt, Abs, SiLU; Sin, Cos, Erf,
                    Exp2, Log2, Rsqrt, Softplus, LeakyReLU, Sign, Clamp, Maximum, Minimum,
                    PowTensor, Cast; Tan, Sinh, Cosh, Asin, Acos, Atan, Asinh, Acosh, Atanh,
                    Log10, Round
    shape.py        Reshape, Permute, GetItem, SetItem, Concatenate, Stack, Narrow, MaskedFill, Where,
                    Flip, Expand, Repeat, Gather, ScatterAdd
    transformer.py  LayerNorm, ScaledDotProductAttention, RMSNorm, Rotary
    losses.py       SoftTargetCrossEntropy, NLLLoss (cross-entropy's PyTorch options),
                    BCE, BCEWithLogits

Each runs through `Function.apply`, which runs this op, or a learner's own inside
`minigrad.use(...)` (seam.py). Where its work is heavy an op calls a kernel by name
(`kernels.segment_sums`, `kernels.cross_entropy_rows`, ...): the plain form in kernels/plain.py
reads like the math, and a faster one may run instead (kernels/__init__.py chooses).

Notation: G is d(loss)/d(output), the `grad` each backward receives; the backward returns one
gradient per input, summed back over broadcast axes (`unbroadcast`). Backwards never modify G in
place: the same array may be on its way to another node. In the table s(a) is the sigmoid,
sp(a) = log(1 + e^a) the softplus, and l = 1 + (pw - 1) y (pw: pos_weight).

RULES below is every op's rule as data: what the forward computes, what each input receives,
and the lesson that derives it ("-": gradchecked in tests/engine/test_ops_gradcheck.py, which
runs every op named here, but not the subject of a lesson). `print(ops.rules_table())` shows it:

    op                        forward                     backward: each input gets                     lesson
    Add                       a + b                       G, G                                          1
    Sub                       a - b                       G, -G                                         1
    Mul                       a b                         G b, G a                                      1
    Div                       a / b                       G / b, -G a / b^2                             2
    Pow                       a^n (n a number)            G n a^(n-1)                                   2
    Neg                       -a                          -G                                            -
    Clone                     a copy of a                 G                                             -
    Copy                      src copied into a new array 0, G (summed back to src)                     -
    MatMul                    A @ B                       G B^T, A^T G                                  3
    RoundedDivide             a // b, or a / b to 0       0, 0 (flat between the steps)                 -
    Remainder                 a - b q, q = a // b or to 0 G, -G q                                       -
    Sum                       sum over axes               G spread back over the axes                   1
    Mean                      mean over axes              G / n spread back over the axes               1
    Max                       max over axes               G to the maximum (ties share it)              4
    Min                       min over axes               G to the minimum (ties share it)              -
    Prod                      product over an axis        G times the product of the others             -
    LogSumExp                 log sum e^a over axes       G softmax(a)                                  -
    Var                       sum (a - mean)^2 / (n - c)  G 2 (a - mean) / (n - c)                      -
    Cumsum                    running sum along an axis   G's running sum from the end                  -
    Exp                       e^a                         G e^a                                         2
    Log                       log a                       G / a                                         2
    Tanh                      tanh a                      G (1 - tanh^2 a)                              1
    Sigmoid                   s = 1 / (1 + e^-a)          G s (1 - s)                                   -
    LogSigmoid                log s(a)                    G s(-a)                                       13
    ReLU                      max(a, 0)                   G [a > 0]                                     -
    GELU                      a Phi(a)                    G (Phi(a) + a phi(a))                         -
    Sqrt                      sqrt a                      G / (2 sqrt a)                                -
    Abs                       |a|                         G sign(a)                                     -
    SiLU                      a s(a)                      G (s + a s (1 - s))                           -
    Sin                       sin a                       G cos a                                       -
    Cos                       cos a                       -G sin a                                      -
    Erf                       erf a                       G 2/sqrt(pi) e^(-a^2)                         -
    Exp2                      2^a                         G 2^a ln 2                                    -
    Log2                      log2 a                      G / (a ln 2)                                  -
    Rsqrt                     a^(-1/2)                    -G a^(-3/2) / 2                               -
    Softplus                  log(1 + e^(b a)) / b        G s(b a) (G past the threshold)               -
    LeakyReLU                 a, or k a where a <= 0      G, or G k                                     -
    Sign                      sign a                      0                                             -
    Clamp                     min(max(a, lo), hi)         G to whichever was taken (a on a tie)         -
    Maximum                   the larger of a and b       G to the winner, G / 2 each at a tie          -
    Minimum                   the smaller of a and b      G to the winner, G / 2 each at a tie          -
    PowTensor                 a^b, both tensors           G b a^(b-1), G a^b log a                      -
    Cast                      a as another float dtype    G in a's dtype                                -
    Tan                       tan a                       G (1 + tan^2 a)                               -
    Sinh                      sinh a                      G cosh a                                      -
    Cosh                      cosh a                      G sinh a                                      -
    Asin                      asin a                      G / sqrt(1 - a^2)                             -
    Acos                      acos a                      -G / sqrt(1 - a^2)                            -
    Atan                      atan a                      G / (1 + a^2)                                 -
    Asinh                     asinh a                     G / sqrt(a^2 + 1)                             -
    Acosh                     acosh a                     G / sqrt(a^2 - 1)                             -
    Atanh                     atanh a                     G / (1 - a^2)                                 -
    Log10                     log10 a                     G / (a ln 10)                                 -
    Round                     floor/ceil/trunc/round a    0 (flat between the steps)                    -
    Reshape                   a in another shape          G reshaped back                               4
    Permute                   a's axes reordered          G permuted back                               4
    GetItem                   a[index]                    G scattered back (a repeated index gets both) 4
    SetItem                   a, value written at index   G off the index, G[index]                     -
    Concatenate               inputs joined along an axis each input its slice of G                     6
    Stack                     inputs stacked on new axis  each input its slice of G                     6
    Narrow                    a slice along an axis       G in that slice, zero elsewhere               -
    MaskedFill                a, value where mask         G where not mask                              -
    Where                     cond ? a : b                G where cond, G elsewhere                     -
    Flip                      a reversed along axes       G reversed                                    -
    Expand                    a broadcast to a shape      G summed back                                 -
    Repeat                    a tiled along each axis     G summed over the copies                      -
    Gather                    a[index] along an axis      G added back where read                       -
    ScatterAdd                a, src added at index       G, G read at index                            -
    Embedding                 E[ids]                      RowSparse: G's rows summed per id             3, 4
    Linear                    x W^T + b                   G W, G^T x, sum G                             5, 6
    Softmax                   p = e^z / sum e^z           p (G - sum(G p))                              5
    LogSoftmax                z - log sum e^z             G - p sum(G)                                  5
    CrossEntropy              mean -log p_y               G (p - onehot(y)) / N                         5
    LinearCrossEntropy        CrossEntropy(x W^T + b)     G dz W, G dz^T x, G sum dz (dz: as above)     5, 6
    LayerNorm                 (x - mean) / std w + b      w G / std minus its means, G xhat, sum G      -
    RMSNorm                   x / rms(x) w                w G / rms minus its part along xhat, G xhat   -
    Rotary                    pairs of x turned by angles G turned back (the same map with -sin)        -
    ScaledDotProductAttention softmax(q k^T s + mask) v   dS k s, dS^T q s, P^T G; dS = softmax's       -
    SoftTargetCrossEntropy    -sum A log softmax(z)       G ((sum A) p - A), -G log p                   -
    NLLLoss                   -sum A x                    -G A, -G x                                    -
    BCE                       -w (y log p+(1-y) log(1-p)) G w (p - y) / (p (1 - p)), G w log((1-p)/p)   -
    BCEWithLogits             w ((1-y) x + l sp(-x))      G w (1-y - l s(-x)), G w ((pw-1) sp(-x) - x)  -

Lessons: 1 the backward graph, 2 finite differences, 3 a lookup is a matmul, 4 sparse row
gradients, 5 the output map, 6 tying the two maps, 13 skip-gram with negative sampling.
"""

from minigrad.engine.function import Function
from minigrad.engine.ops.arithmetic import (
    Add,
    Clone,
    Copy,
    Div,
    MatMul,
    Mul,
    Neg,
    Pow,
    Remainder,
    RoundedDivide,
    Sub,
    unbroadcast,
)
from minigrad.engine.ops.elementwise import (
    GELU,
    Abs,
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atanh,
    Cast,
    Clamp,
    Cos,
    Cosh,
    Erf,
    Exp,
    Exp2,
    LeakyReLU,
    Log,
    Log2,
    Log10,
    LogSigmoid,
    Maximum,
    Minimum,
    PowTensor,
    ReLU,
    Round,
    Rsqrt,
    Sigmoid,
    Sign,
    SiLU,
    Sin,
    Sinh,
    Softplus,
    Sqrt,
    Tan,
    Tanh,
)
from minigrad.engine.ops.losses import (
    BCE,
    BCEWithLogits,
    NLLLoss,
    SoftTargetCrossEntropy,
)
from minigrad.engine.ops.reductions import Cumsum, LogSumExp, Max, Mean, Min, Prod, Sum, Var
from minigrad.engine.ops.shape import (
    Concatenate,
    Expand,
    Flip,
    Gather,
    GetItem,
    MaskedFill,
    Narrow,
    Permute,
    Repeat,
    Reshape,
    ScatterAdd,
    SetItem,
    Stack,
    Where,
)
from minigrad.engine.ops.transformer import LayerNorm, RMSNorm, Rotary, ScaledDotProductAttention
from minigrad.engine.ops.vocabulary import (
    CrossEntropy,
    Embedding,
    Linear,
    LinearCrossEntropy,
    LogSoftmax,
    Softmax,
    log_softmax,
    shifted_exp,
)

__all__ = [
    "GELU", "Abs", "Add", "Clone", "Concatenate", "Copy", "CrossEntropy", "Div", "Embedding", "Exp",
    "GetItem", "LayerNorm", "Linear", "LinearCrossEntropy", "Log", "LogSigmoid", "LogSoftmax",
    "MaskedFill", "MatMul", "Max", "Mean", "Mul", "Narrow", "Neg", "Permute", "Pow", "ReLU",
    "RMSNorm", "Reshape", "Rotary", "ScaledDotProductAttention", "SetItem", "SiLU", "Sigmoid",
    "Softmax", "Sqrt", "Stack", "Sub", "Sum", "Tanh", "Where", "log_softmax", "shifted_exp", "unbroadcast",
    # issue 24: PyTorch's everyday ops
    "Cast", "Clamp", "Cos", "Erf", "Exp2", "Expand", "Flip", "LeakyReLU", "Log2", "LogSumExp",
    "Maximum", "Min", "Minimum", "NLLLoss", "PowTensor", "Prod", "Rsqrt", "Sign", "Sin", "Softplus",
    "SoftTargetCrossEntropy", "Var",
    # issue 33: more of PyTorch's
    "BCE", "BCEWithLogits", "Cumsum", "Gather", "Repeat",
    "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cosh", "Log10", "Round", "Sinh", "Tan",
    "ScatterAdd", "RoundedDivide", "Remainder",
]

# op: (forward, what each input receives, lesson)
RULES: dict[type[Function], tuple[str, str, str]] = {
    Add: ("a + b", "G, G", "1"),
    Sub: ("a - b", "G, -G", "1"),
    Mul: ("a b", "G b, G a", "1"),
    Div: ("a / b", "G / b, -G a / b^2", "2"),
    Pow: ("a^n (n a number)", "G n a^(n-1)", "2"),
    Neg: ("-a", "-G", "-"),
    Clone: ("a copy of a", "G", "-"),
    Copy: ("src copied into a new array", "0, G (summed back to src)", "-"),
    MatMul: ("A @ B", "G B^T, A^T G", "3"),
    RoundedDivide: ("a // b, or a / b to 0", "0, 0 (flat between the steps)", "-"),
    Remainder: ("a - b q, q = a // b or to 0", "G, -G q", "-"),
    Sum: ("sum over axes", "G spread back over the axes", "1"),
    Mean: ("mean over axes", "G / n spread back over the axes", "1"),
    Max: ("max over axes", "G to the maximum (ties share it)", "4"),
    Min: ("min over axes", "G to the minimum (ties share it)", "-"),
    Prod: ("product over an axis", "G times the product of the others", "-"),
    LogSumExp: ("log sum e^a over axes", "G softmax(a)", "-"),
    Var: ("sum (a - mean)^2 / (n - c)", "G 2 (a - mean) / (n - c)", "-"),
    Cumsum: ("running sum along an axis", "G's running sum from the end", "-"),
    Exp: ("e^a", "G e^a", "2"),
    Log: ("log a", "G / a", "2"),
    Tanh: ("tanh a", "G (1 - tanh^2 a)", "1"),
    Sigmoid: ("s = 1 / (1 + e^-a)", "G s (1 - s)", "-"),
    LogSigmoid: ("log s(a)", "G s(-a)", "13"),
    ReLU: ("max(a, 0)", "G [a > 0]", "-"),
    GELU: ("a Phi(a)", "G (Phi(a) + a phi(a))", "-"),
    Sqrt: ("sqrt a", "G / (2 sqrt a)", "-"),
    Abs: ("|a|", "G sign(a)", "-"),
    SiLU: ("a s(a)", "G (s + a s (1 - s))", "-"),
    Sin: ("sin a", "G cos a", "-"),
    Cos: ("cos a", "-G sin a", "-"),
    Erf: ("erf a", "G 2/sqrt(pi) e^(-a^2)", "-"),
    Exp2: ("2^a", "G 2^a ln 2", "-"),
    Log2: ("log2 a", "G / (a ln 2)", "-"),
    Rsqrt: ("a^(-1/2)", "-G a^(-3/2) / 2", "-"),
    Softplus: ("log(1 + e^(b a)) / b", "G s(b a) (G past the threshold)", "-"),
    LeakyReLU: ("a, or k a where a <= 0", "G, or G k", "-"),
    Sign: ("sign a", "0", "-"),
    Clamp: ("min(max(a, lo), hi)", "G to whichever was taken (a on a tie)", "-"),
    Maximum: ("the larger of a and b", "G to the winner, G / 2 each at a tie", "-"),
    Minimum: ("the smaller of a and b", "G to the winner, G / 2 each at a tie", "-"),
    PowTensor: ("a^b, both tensors", "G b a^(b-1), G a^b log a", "-"),
    Cast: ("a as another float dtype", "G in a's dtype", "-"),
    Tan: ("tan a", "G (1 + tan^2 a)", "-"),
    Sinh: ("sinh a", "G cosh a", "-"),
    Cosh: ("cosh a", "G sinh a", "-"),
    Asin: ("asin a", "G / sqrt(1 - a^2)", "-"),
    Acos: ("acos a", "-G / sqrt(1 - a^2)", "-"),
    Atan: ("atan a", "G / (1 + a^2)", "-"),
    Asinh: ("asinh a", "G / sqrt(a^2 + 1)", "-"),
    Acosh: ("acosh a", "G / sqrt(a^2 - 1)", "-"),
    Atanh: ("atanh a", "G / (1 - a^2)", "-"),
    Log10: ("log10 a", "G / (a ln 10)", "-"),
    Round: ("floor/ceil/trunc/round a", "0 (flat between the steps)", "-"),
    Reshape: ("a in another shape", "G reshaped back", "4"),
    Permute: ("a's axes reordered", "G permuted back", "4"),
    GetItem: ("a[index]", "G scattered back (a repeated index gets both)", "4"),
    SetItem: ("a, value written at index", "G off the index, G[index]", "-"),
    Concatenate: ("inputs joined along an axis", "each input its slice of G", "6"),
    Stack: ("inputs stacked on new axis", "each input its slice of G", "6"),
    Narrow: ("a slice along an axis", "G in that slice, zero elsewhere", "-"),
    MaskedFill: ("a, value where mask", "G where not mask", "-"),
    Where: ("cond ? a : b", "G where cond, G elsewhere", "-"),
    Flip: ("a reversed along axes", "G reversed", "-"),
    Expand: ("a broadcast to a shape", "G summed back", "-"),
    Repeat: ("a tiled along each axis", "G summed over the copies", "-"),
    Gather: ("a[index] along an axis", "G added back where read", "-"),
    ScatterAdd: ("a, src added at index", "G, G read at index", "-"),
    Embedding: ("E[ids]", "RowSparse: G's rows summed per id", "3, 4"),
    Linear: ("x W^T + b", "G W, G^T x, sum G", "5, 6"),
    Softmax: ("p = e^z / sum e^z", "p (G - sum(G p))", "5"),
    LogSoftmax: ("z - log sum e^z", "G - p sum(G)", "5"),
    CrossEntropy: ("mean -log p_y", "G (p - onehot(y)) / N", "5"),
    LinearCrossEntropy: ("CrossEntropy(x W^T + b)", "G dz W, G dz^T x, G sum dz (dz: as above)", "5, 6"),
    LayerNorm: ("(x - mean) / std w + b", "w G / std minus its means, G xhat, sum G", "-"),
    RMSNorm: ("x / rms(x) w", "w G / rms minus its part along xhat, G xhat", "-"),
    Rotary: ("pairs of x turned by angles", "G turned back (the same map with -sin)", "-"),
    ScaledDotProductAttention: ("softmax(q k^T s + mask) v", "dS k s, dS^T q s, P^T G; dS = softmax's", "-"),
    SoftTargetCrossEntropy: ("-sum A log softmax(z)", "G ((sum A) p - A), -G log p", "-"),
    NLLLoss: ("-sum A x", "-G A, -G x", "-"),
    BCE: ("-w (y log p+(1-y) log(1-p))", "G w (p - y) / (p (1 - p)), G w log((1-p)/p)", "-"),
    BCEWithLogits: ("w ((1-y) x + l sp(-x))", "G w (1-y - l s(-x)), G w ((pw-1) sp(-x) - x)", "-"),
}


def rules_table() -> str:
    """RULES as the table in this module's docstring: op, forward, what each input receives, lesson."""
    rows = [("op", "forward", "backward: each input gets", "lesson")]
    rows += [(op.__name__, *rule) for op, rule in RULES.items()]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join("    " + " ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " " + row[3]
                     for row in rows)
