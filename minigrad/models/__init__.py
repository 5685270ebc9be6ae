"""Models built from minigrad's modules: TinyLM (an MLP language model), TinyGPT (a small
decoder-only transformer with nanoGPT's names), Llama (a Llama-style tied transformer with
transformers' names) and SkipGram (word2vec's static embedding)."""

from minigrad.models.llama import Llama, LlamaBlock, LlamaConfig
from minigrad.models.skipgram import SkipGram
from minigrad.models.tinygpt import TinyGPT
from minigrad.models.tinylm import TinyLM, next_token_windows, random_batch

__all__ = ["Llama", "LlamaBlock", "LlamaConfig", "SkipGram", "TinyGPT", "TinyLM", "next_token_windows",
           "random_batch"]
