"""Stanford CS336 assignment 1's tokenizer adapters, answered by minigrad alone.

CS336's tests/adapters.py asks a student's code for `run_train_bpe` and `get_tokenizer`; these two
functions have those signatures and only call minigrad.learn.bpe, so pointing CS336's adapters at
them runs its test_train_bpe.py and test_tokenizer.py on minigrad (docs/bpe.md says how). Our own
tests of them are beside this file.
"""

from __future__ import annotations

import os
from pathlib import Path

from minigrad.learn.bpe import ByteTokenizer, train_byte_pairs


def run_train_bpe(input_path: str | os.PathLike, vocab_size: int, special_tokens: list[str],
                  **kwargs) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """(vocab, merges) learned on the text of the file at input_path."""
    return train_byte_pairs(Path(input_path).read_text(encoding="utf-8"), vocab_size, special_tokens)


def get_tokenizer(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]],
                  special_tokens: list[str] | None = None) -> ByteTokenizer:
    """A tokenizer with encode, decode and encode_iterable for this vocab, merges and special tokens."""
    return ByteTokenizer(vocab, merges, special_tokens)
