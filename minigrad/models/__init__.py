"""Models built from minigrad's modules: TinyLM (an MLP language model)."""

from minigrad.models.tinylm import TinyLM, next_token_windows

__all__ = ["TinyLM", "next_token_windows"]
