"""Modules and functional ops, named as in `torch.nn`."""

from minigrad.nn import functional, utils
from minigrad.nn.layers import GELU, Dropout, Embedding, LayerNorm, Linear
from minigrad.nn.module import Module, ModuleDict, ModuleList, Parameter, Sequential

__all__ = ["GELU", "Dropout", "Embedding", "LayerNorm", "Linear", "Module", "ModuleDict", "ModuleList",
           "Parameter", "Sequential", "functional", "utils"]
