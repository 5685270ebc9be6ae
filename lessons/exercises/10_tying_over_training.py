"""Lesson 10 exercise: how many numbers a GPT-2-style model trains.

Fill in the function below, then run `minigrad check 10`.
"""


def gpt_parameter_count(vocab_size: int, context: int, d_model: int, n_layers: int, tied: bool) -> int:
    """The number of trained numbers in minigrad.models.TinyGPT (nanoGPT's layout, as GPT-2).

    With V = vocab_size, T = context, d = d_model, L = n_layers:
        transformer.wte: (V, d) token table        transformer.wpe: (T, d) position table
        L blocks, each:  ln_1: LayerNorm(d)        attn.c_attn: Linear(d, 3d)   attn.c_proj: Linear(d, d)
                         ln_2: LayerNorm(d)        mlp.c_fc: Linear(d, 4d)      mlp.c_proj: Linear(4d, d)
        transformer.ln_f: LayerNorm(d)             lm_head: Linear(d, V, bias=False)
    nn.Linear(i, o) holds a weight (o, i) and a bias (o,); LayerNorm(d) a scale (d,) and a shift
    (d,). When tied, lm_head.weight IS transformer.wte.weight: one Parameter with two names.
    The number of heads does not change the count.
    returns: an int, each trained number counted once.
    """
    raise NotImplementedError("lesson 10: write gpt_parameter_count(vocab_size, context, d_model, n_layers, "
                              "tied)")
