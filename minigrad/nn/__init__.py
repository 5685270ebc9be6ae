"""Modules and functional ops, named as in `torch.nn`."""

from minigrad.nn import functional
from minigrad.nn.layers import Embedding, Linear
from minigrad.nn.module import Module, Parameter

__all__ = ["Embedding", "Linear", "Module", "Parameter", "functional"]
