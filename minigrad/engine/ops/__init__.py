"""The differentiable ops, one `Function` each: forward and backward side by side, by family.

    vocabulary.py   Embedding, Linear, Softmax, LogSoftmax, CrossEntropy (lessons 3-6: read first)
    arithmetic.py   Add, Sub, Mul, Div, Pow, Neg, Clone, Copy, MatMul, and `unbroadcast`
    reductions.py   Sum, Mean, Max
    elementwise.py  Exp, Log, Tanh, Sigmoid, LogSigmoid, ReLU, GELU, Sqrt, Abs, SiLU
    shape.py        Reshape, Permute, GetItem, SetItem, Concatenate, Stack, Narrow, MaskedFill, Where
    transformer.py  LayerNorm, ScaledDotProductAttention, RMSNorm, Rotary

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

Lessons: 1 the backward graph, 2 finite differences, 3 a lookup is a matmul, 4 sparse row
gradients, 5 the output map, 6 tying the two maps, 11 skip-gram with negative sampling ("-":
gradchecked in tests/engine/test_ops_gradcheck.py, not the subject of a lesson).
"""

from minigrad.engine.ops.arithmetic import Add, Clone, Copy, Div, MatMul, Mul, Neg, Pow, Sub, unbroadcast
from minigrad.engine.ops.elementwise import (
    GELU,
    Abs,
    Exp,
    Log,
    LogSigmoid,
    ReLU,
    Sigmoid,
    SiLU,
    Sqrt,
    Tanh,
)
from minigrad.engine.ops.reductions import Max, Mean, Sum
from minigrad.engine.ops.shape import (
    Concatenate,
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
]
