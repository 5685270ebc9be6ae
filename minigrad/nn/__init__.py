"""Modules and functional ops, named as in `torch.nn`."""

from minigrad.nn import functional, utils
from minigrad.nn.layers import (
    GELU,
    CausalSelfAttention,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    ReLU,
    RMSNorm,
    RotaryEmbedding,
    Sigmoid,
    SiLU,
    SwiGLU,
    Tanh,
)
from minigrad.nn.module import Module, ModuleDict, ModuleList, Parameter, Sequential

__all__ = ["GELU", "CausalSelfAttention", "Dropout", "Embedding", "LayerNorm", "Linear", "Module",
           "ModuleDict", "ModuleList", "Parameter", "RMSNorm", "ReLU", "RotaryEmbedding", "Sequential",
           "SiLU", "Sigmoid", "SwiGLU", "Tanh", "functional", "utils"]
