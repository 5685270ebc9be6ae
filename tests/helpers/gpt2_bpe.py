"""GPT-2's byte-level vocabulary, built from its merges (data/gpt2_merges.txt.xz, under OpenAI's
license in data/gpt2_LICENSE.txt) as CS336's tests hand it to a tokenizer, and tiktoken's GPT-2
encoding built from the same file (tiktoken would otherwise download it; nothing is fetched here)."""

from __future__ import annotations

import lzma
from functools import lru_cache
from pathlib import Path

from minigrad.learn.bpe import GPT2_PATTERN

MERGES = Path(__file__).resolve().parent / "data" / "gpt2_merges.txt.xz"
END_OF_TEXT = "<|endoftext|>"


@lru_cache(maxsize=1)
def byte_of_char() -> dict[str, int]:
    """GPT-2 writes each byte as one printable character: the printable Latin-1 bytes as themselves,
    the other 68 (controls, space, the soft hyphen...) as chr(256), chr(257)... in byte order. Its
    first 256 ids follow the same order: the printable bytes, then the others."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + k): b for k, b in enumerate(others)}}


@lru_cache(maxsize=1)
def gpt2_vocab_and_merges() -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """(vocab id -> bytes, merges as pairs of bytes): ids 0-255 the bytes, 256 + i merge i, 50256
    <|endoftext|> (the ids of GPT-2's encoder)."""
    decode = byte_of_char()

    def as_bytes(written: str) -> bytes:
        return bytes(decode[ch] for ch in written)

    lines = lzma.open(MERGES, "rt", encoding="utf-8").read().splitlines()
    merges = [tuple(as_bytes(side) for side in line.split(" ")) for line in lines if line]
    pieces = [bytes([b]) for b in decode.values()] + [a + b for a, b in merges] + [END_OF_TEXT.encode()]
    return dict(enumerate(pieces)), merges


@lru_cache(maxsize=1)
def tiktoken_gpt2():
    """tiktoken's "gpt2" encoding, made from the merges above instead of downloaded."""
    import tiktoken

    vocab, _ = gpt2_vocab_and_merges()
    ranks = {piece: i for i, piece in vocab.items() if i < 50256}
    return tiktoken.Encoding("gpt2 (from data/gpt2_merges.txt.xz)", pat_str=GPT2_PATTERN,
                             mergeable_ranks=ranks, special_tokens={END_OF_TEXT: 50256})


def tiktoken_or_fail() -> None:
    """tiktoken (the `dev` extra) is the reference: skip without it, but fail under CI, where
    `make test` installs it."""
    import os

    import pytest

    try:
        import tiktoken  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI: tiktoken is missing; `make test` installs it with the dev extra")
        pytest.skip("tiktoken is not installed (pip install -e '.[dev]')")
