"""Models built from minigrad's modules: TinyLM (an MLP language model) and TinyGPT (a small
decoder-only transformer with nanoGPT's names)."""

from minigrad.models.tinygpt import TinyGPT
from minigrad.models.tinylm import TinyLM, next_token_windows

__all__ = ["TinyGPT", "TinyLM", "next_token_windows"]
