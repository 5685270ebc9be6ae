"""Modules and functional ops, named as in `torch.nn`."""

from minigrad.nn import functional, utils
from minigrad.nn.layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sigmoid, Tanh
from minigrad.nn.module import Module, ModuleDict, ModuleList, Parameter, Sequential

__all__ = ["GELU", "Dropout", "Embedding", "LayerNorm", "Linear", "Module", "ModuleDict", "ModuleList",
           "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh", "functional", "utils"]
