"""Modules and functional ops, named as in `torch.nn`."""

from minigrad.nn import functional, utils
from minigrad.nn.layers import (
    GELU,
    CausalSelfAttention,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    RMSNorm,
    RotaryEmbedding,
    SiLU,
    SwiGLU,
)
from minigrad.nn.module import Module, ModuleDict, ModuleList, Parameter, Sequential

__all__ = ["GELU", "CausalSelfAttention", "Dropout", "Embedding", "LayerNorm", "Linear", "Module",
           "ModuleDict", "ModuleList", "Parameter", "RMSNorm", "RotaryEmbedding", "Sequential", "SiLU",
           "SwiGLU", "functional", "utils"]
