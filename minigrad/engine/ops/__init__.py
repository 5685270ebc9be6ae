"""The differentiable ops, one `Function` each: forward and backward side by side, by family.

    vocabulary.py   Embedding, Linear, Softmax, LogSoftmax, CrossEntropy (lessons 3-6: read first)
    arithmetic.py   Add, Sub, Mul, Div, Pow, Neg, Clone, Copy, MatMul, and `unbroadcast`
    reductions.py   Sum, Mean, Max; Min, Prod, LogSumExp, Var
    elementwise.py  Exp, Log, Tanh, Sigmoid, LogSigmoid, ReLU, GELU, Sqrt, Abs, SiLU; Sin, Cos, Erf,
                    Exp2, Log2, Rsqrt, Softplus, LeakyReLU, Sign, Clamp, Maximum, Minimum,
                    PowTensor, Cast
    shape.py        Reshape, Permute, GetItem, SetItem, Concatenate, Stack, Narrow, MaskedFill, Where,
                    Flip, Expand
    transformer.py  LayerNorm, ScaledDotProductAttention, RMSNorm, Rotary
    losses.py       SoftTargetCrossEntropy, NLLLoss (cross-entropy's PyTorch options)

Each runs through `Function.apply`, which asks the seam (seam.py) which implementation of the op
runs: this plain one, its fast twin (fast_ops.py), or a learner's own (`minigrad.use`).

Notation: G is d(loss)/d(output), the `grad` each backward receives; the backward returns one
gradient per input, summed back over broadcast axes (`unbroadcast`). Backwards never modify G in
place: the same array may be on its way to another node.

    op            forward                 backward (what each input receives)       lesson
    Add, Sub      a + b, a - b            G, +-G                                    1
    Mul           a b                     G b, G a                                  1
    Div           a / b                   G / b, -G a / b^2                         2
    Pow           a^n (n a number)        G n a^(n-1)                               2
    Neg, Clone    -a, a copy              -G, G                                     -
    MatMul        A @ B                   G B^T, A^T G                              3
    Sum, Mean     sum / mean over axes    G (or G / n) spread back over the axes    1
    Max           max over axes           G to the maximum (ties share it)          4
    Exp, Log      e^a, log a              G e^a, G / a                              2
    Tanh          tanh a                  G (1 - tanh^2 a)                          1
    Sigmoid       s = 1 / (1 + e^-a)      G s (1 - s)                               -
    LogSigmoid    log s(a)                G s(-a)                                   11
    ReLU, GELU    max(a, 0), a Phi(a)     G [a > 0], G (Phi(a) + a phi(a))          -
    Reshape, Permute, GetItem             G reshaped / permuted back / scattered    4
                                          (an index picked twice gets both)
    Concatenate, Stack                    each input its slice of G                 6
    Softmax       p = e^z / sum e^z       p (G - sum(G p))                          5
    LogSoftmax    z - log sum e^z         G - p sum(G)                              5
    CrossEntropy  mean -log p_y           G (p - onehot(y)) / N                     5
    LinearCrossEntropy  CrossEntropy(x W^T + b): dz = (p - onehot(y)) / N,
                  then G dz W, G dz^T x, G sum dz                                    5, 6
    Embedding     E[ids]                  RowSparse: G's rows summed per id         3, 4
    Linear        x W^T + b               G W, G^T x, sum G                         5, 6
    LayerNorm     (x - mean) / std w + b  w G / std minus its means, G x_hat, sum G -
    MaskedFill    a, value where mask     G where not mask                          -
    Where         cond ? a : b            G where cond, G elsewhere                 -
    Narrow        a slice along an axis   G in that slice, zero elsewhere           -
    Sqrt, Abs     sqrt a, |a|             G / (2 sqrt a), G sign(a)                 -
    ScaledDotProductAttention             dV = P^T G, dS = P (dP - sum(dP P)), ...  -
                  softmax(q k^T s + mask) v
    RMSNorm       x / rms(x) w            w G / rms minus its projection on xhat    -
    Rotary        pairs turned by angles  G turned back (the same map with -sin)    -
    SiLU          a s(a)                  G (s + a s (1 - s))                       -
    Sin, Cos      sin a, cos a            G cos a, -G sin a                         -
    Erf, Exp2     erf a, 2^a              G 2/sqrt(pi) e^(-a^2), G 2^a ln 2          -
    Log2, Rsqrt   log2 a, a^(-1/2)        G / (a ln 2), -G a^(-3/2) / 2             -
    Softplus      log(1 + e^(b a)) / b    G s(b a) (G past the threshold)           -
    LeakyReLU     a, or k a where a <= 0  G, or G k                                 -
    Sign          sign a                  0                                         -
    Clamp         min(max(a, lo), hi)     G to whichever was taken (a on a tie)     -
    Maximum, Minimum                      G to the winner, G / 2 each at a tie      -
    PowTensor     a^b, both tensors       G b a^(b-1), G a^b log a                  -
    Cast          a as another float      G in a's dtype                            -
    Min           min over axes           G to the minimum (ties share it)          -
    Prod          product over an axis    G times the product of the others         -
    LogSumExp     log sum e^a over axes   G softmax(a)                              -
    Var           sum (a - mean)^2 / (n - c)  G 2 (a - mean) / (n - c)              -
    Flip, Expand  reversed, broadcast     G reversed, G summed back                 -
    SoftTargetCrossEntropy  -sum A log softmax(z)  G ((sum A) p - A), -G log p      -
    NLLLoss       -sum A x                -G A, -G x                                -

Lessons: 1 the backward graph, 2 finite differences, 3 a lookup is a matmul, 4 sparse row
gradients, 5 the output map, 6 tying the two maps, 11 skip-gram with negative sampling ("-":
gradchecked in tests/engine/test_ops_gradcheck.py, not the subject of a lesson).
"""

from minigrad.engine.ops.arithmetic import Add, Clone, Copy, Div, MatMul, Mul, Neg, Pow, Sub, unbroadcast
from minigrad.engine.ops.elementwise import (
    GELU,
    Abs,
    Cast,
    Clamp,
    Cos,
    Erf,
    Exp,
    Exp2,
    LeakyReLU,
    Log,
    Log2,
    LogSigmoid,
    Maximum,
    Minimum,
    PowTensor,
    ReLU,
    Rsqrt,
    Sigmoid,
    Sign,
    SiLU,
    Sin,
    Softplus,
    Sqrt,
    Tanh,
)
from minigrad.engine.ops.losses import NLLLoss, SoftTargetCrossEntropy
from minigrad.engine.ops.reductions import LogSumExp, Max, Mean, Min, Prod, Sum, Var
from minigrad.engine.ops.shape import (
    Concatenate,
    Expand,
    Flip,
    GetItem,
    MaskedFill,
    Narrow,
    Permute,
    Reshape,
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
]
