"""Lesson 10 reference answer."""


def gpt_parameter_count(vocab_size: int, context: int, d_model: int, n_layers: int, tied: bool) -> int:
    """Trained numbers in a GPT-2-style model: tables, blocks, final LayerNorm, head unless tied."""
    d = d_model
    layer_norm = 2 * d                                   # scale and shift
    attention = (d * 3 * d + 3 * d) + (d * d + d)        # c_attn and c_proj, with biases
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)          # c_fc and c_proj, with biases
    block = 2 * layer_norm + attention + mlp
    tables = vocab_size * d + context * d
    head = 0 if tied else vocab_size * d                 # no bias on the head
    return tables + n_layers * block + layer_norm + head
