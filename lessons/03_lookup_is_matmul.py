# %% [markdown]
# # Lesson 3: Looking up a row is multiplying by a one-hot
#
# Reading row t of a table equals multiplying a one-hot vector by it, in value and gradient, not in cost.
#
# ## What you will see
#
# Token ids are usually turned into vectors by indexing: `E[ids]`. It looks like bookkeeping,
# not arithmetic. Here we write each id as a one-hot row (all zeros except a single 1 at the
# id) and multiply: `one_hot(ids) @ E`. You will see that
#
# - both routes give the same vectors, and minigrad's backward gives the same gradient for `E`
#   along both;
# - the one-hot route's gradient is `O^T G` (one-hot matrix transposed, times the gradient
#   arriving from above): a dense `(V, d)` array whose rows are zero wherever no token was read;
#   the lookup route returns the same numbers as a `RowSparse` that names only the rows it read;
# - as the vocabulary `V` grows, the one-hot route's time and memory grow with `V` while the
#   lookup's stay flat;
# - the table's gradient of the product written by you (`minigrad check 3` marks it), checked
#   against both routes once it passes.

# %% [markdown]
# ## Predict first
#
# Take a vocabulary of 65,536 tokens, rows of width d = 64, and a batch of 256 tokens, all in
# float32. For one forward and backward pass, the one-hot route holds the one-hot matrix `O`
# (256 x 65,536) and a dense gradient for `E`; the lookup route holds the 256 ids and a
# row-sparse gradient with at most 256 rows.
#
# Before running anything, write down two guesses. Do the two routes give the same gradient
# for `E`, or does the multiplication spread some gradient onto rows that were never read?
# And how many times more bytes does the one-hot route hold: about 2, about 100, or about 1,000?

# %%
import time
import tracemalloc

import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad.learn.course import yours
from minigrad.learn.kit import setup
from minigrad.nn import functional as F

lesson = setup(3)  # caps BLAS threads, draws headless, makes OUT
OUT = lesson.out
size = lesson.sizes(full=dict(vocab_sizes=[256, 1024, 4096, 16384, 65536]),  # one place for the sizes
                    small=dict(vocab_sizes=[256, 1024, 4096, 16384]))
rng = np.random.default_rng(3)


def one_hot(ids: np.ndarray, vocab_size: int, dtype=np.float64) -> np.ndarray:
    """(N,) int ids -> (N, V): row n is all zeros except a 1 in column ids[n]."""
    ids = np.asarray(ids).reshape(-1)
    rows = np.zeros((ids.size, vocab_size), dtype=dtype)
    rows[np.arange(ids.size), ids] = 1
    return rows


# %% [markdown]
# ## Two routes to the same vectors
#
# A six-word vocabulary and the sentence "the cat sat on the mat". The word "the" is read
# twice; "<eos>" is never read. Everything is float64 here so we can compare to the last bit.

# %%
vocab = ["the", "cat", "sat", "on", "mat", "<eos>"]
V, d = len(vocab), 4
ids = np.array([0, 1, 2, 3, 0, 4])  # the cat sat on the mat
E = mg.tensor(rng.standard_normal((V, d)), requires_grad=True, name="E")
O = one_hot(ids, V)
print("one-hot O, one row per position:\n", O.astype(int))

by_product = mg.tensor(O) @ E
by_lookup = F.embedding(ids, E)
# every other row is multiplied by an exact zero, so the product is the row itself, bit for bit
assert np.array_equal(by_product.data, by_lookup.data), "one_hot(ids) @ E should equal E[ids] exactly"
print("O @ E equals E[ids] exactly:", np.array_equal(by_product.data, by_lookup.data))

# %% [markdown]
# ## Build it: the table's gradient of the product
#
# Run `minigrad exercise 3`: it copies the stub to `minigrad-exercises/03_lookup_is_matmul.py`,
# in the folder you run it from (in a notebook, define the function in a cell instead and run
# `minigrad.check(3, globals())`). There, write `table_grad_from_one_hot(one_hot, upstream)`:
# given the one-hot matrix `O` of shape `(N, V)` and the upstream gradient `G = dL/dX` of shape
# `(N, d)` for `X = O @ E`, return `dL/dE`, shape `(V, d)`. Then run `minigrad check 3`: it
# compares your answer with finite differences and says which row is off and why.
#
# The line printed below says whose function this lesson runs: yours once your copy passes,
# else minigrad's own (the backward of the product). It is set beside both routes' gradients
# in the comparison that follows. In a notebook, `pieces = yours(3, globals())` marks the
# definitions of your notebook instead of the file.

# %%
pieces = yours(3)  # your table_grad_from_one_hot from minigrad-exercises/, if it passes `minigrad check 3`
table_grad_from_one_hot = pieces.get("table_grad_from_one_hot")

# %% [markdown]
# Now send the same upstream gradient `G` (shape `(N, d)`, one vector per position, as if it
# came down from the rest of a network) back through each route and compare what reaches `E`.

# %%
G = rng.standard_normal((ids.size, d))

by_product.backward(G)
grad_from_product = E.grad
E.grad = None
by_lookup.backward(G)
grad_from_lookup = E.grad
E.grad = None

print("product route gives a", type(grad_from_product).__name__, grad_from_product.shape)
print("lookup route gives  ", grad_from_lookup)
print("rows the lookup names:", grad_from_lookup.indices, "(row 5, '<eos>', is absent)")

# %%
assert isinstance(grad_from_product, np.ndarray) and grad_from_product.shape == (V, d)
assert isinstance(grad_from_lookup, mg.RowSparse)
assert np.allclose(grad_from_product, grad_from_lookup.to_dense(), rtol=0, atol=1e-12), \
    "the two routes should give the same gradient for E"
# the gradient of X = O E with respect to E, from the function named above
by_hand = table_grad_from_one_hot(O, G)
assert np.allclose(grad_from_product, by_hand, rtol=0, atol=1e-12), "table_grad_from_one_hot differs"
# row 0 ("the") collects both of its positions; row 5 ("<eos>") collects nothing at all
assert np.allclose(grad_from_product[0], G[0] + G[4])
assert not np.any(grad_from_product[5]), "an unread row must get an exact zero"
print("same gradient along both routes and from table_grad_from_one_hot; row 'the' = G[0] + G[4]; "
      "row '<eos>' = 0")

# %% [markdown]
# The multiplication spreads nothing: every column of `O` that holds no 1 multiplies its row of
# `G` by zero. The gradient of the product form is `O^T G`, and row `v` of `O^T G` is the sum of
# the upstream vectors at the positions where token `v` was read. That is the same rule the
# lookup's backward applies directly. The picture below shows `O`, `G` and `O^T G` side by side.

# %%
fig, axes = plt.subplots(1, 3, figsize=(10, 3.2), gridspec_kw={"width_ratios": [V, d, d]})
panels = [(O, "O (positions x vocabulary)"), (G, "G = dL/dX (positions x d)"),
          (grad_from_product, "O^T G = dL/dE (vocabulary x d)")]
for ax, (image, title) in zip(axes, panels):
    limit = np.abs(image).max()
    ax.imshow(image, cmap="coolwarm", vmin=-limit, vmax=limit)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
axes[0].set_yticks(range(ids.size), [vocab[i] for i in ids])
axes[0].set_xticks(range(V), vocab, rotation=90, fontsize=7)
axes[2].set_yticks(range(V), vocab)
axes[1].set_yticks([])
fig.suptitle("The one-hot gradient O^T G: a row per vocabulary entry, zero for '<eos>'")
lesson.save(fig, "onehot_gradient.png",
            "the one-hot route's table gradient O^T G, row by row: each read word's row holds its "
            "gradient, the unread '<eos>' row is zero")

# %% [markdown]
# ## Check both routes against finite differences
#
# Agreeing with each other is not enough: both could be wrong the same way. `minigrad.tools.gradcheck`
# nudges every entry of `E` up and down by a tiny step and compares the change in the output with
# what backward claims.

# %%
print(mg.gradcheck(lambda table: mg.tensor(O) @ table, [E]))
print(mg.gradcheck(lambda table: F.embedding(ids, table), [E]))

# %% [markdown]
# ## What the disguise costs
#
# Equal in value, equal in gradient. The difference is the price. Building `O` writes `N x V`
# numbers, almost all zeros; `O @ E` does `N x V x d` multiply-adds where the lookup copies
# `N x d` numbers; and the backward produces a dense `(V, d)` gradient even though at most `N`
# of its rows can be nonzero. We time both routes (forward and backward, best of a few runs)
# for growing `V`, count the bytes each one holds (the one-hot matrix and the dense gradient,
# versus the ids and the `RowSparse`), and cross-check those counts with `tracemalloc`, which
# records the peak of what numpy actually allocated during the pass.

# %%
N_TOKENS, WIDTH = 256, 64
vocab_sizes = size.vocab_sizes
REPEATS = 5


def one_hot_route(token_ids: np.ndarray, table: mg.Tensor, upstream: np.ndarray) -> int:
    """Forward and backward as O @ E; returns the bytes of O and of the dense gradient."""
    onehot = one_hot(token_ids, table.shape[0], table.dtype)
    (mg.tensor(onehot) @ table).backward(upstream)
    held = onehot.nbytes + table.grad.nbytes
    table.grad = None
    return held


def lookup_route(token_ids: np.ndarray, table: mg.Tensor, upstream: np.ndarray) -> int:
    """Forward and backward as E[ids]; returns the bytes of the ids and of the RowSparse gradient."""
    F.embedding(token_ids, table).backward(upstream)
    held = token_ids.nbytes + table.grad.nbytes
    table.grad = None
    return held


def best_time(route, *args) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        route(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def traced_peak(route, *args) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    route(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


# %%
routes = {"one-hot @ E": one_hot_route, "lookup E[ids]": lookup_route}
seconds = {name: [] for name in routes}
held_bytes = {name: [] for name in routes}
peak_bytes = {name: [] for name in routes}
for vocab_size in vocab_sizes:
    table = mg.tensor(rng.standard_normal((vocab_size, WIDTH)).astype(np.float32), requires_grad=True)
    token_ids = rng.integers(0, vocab_size, N_TOKENS)
    upstream = rng.standard_normal((N_TOKENS, WIDTH)).astype(np.float32)
    for name, route in routes.items():
        held_bytes[name].append(route(token_ids, table, upstream))
        seconds[name].append(best_time(route, token_ids, table, upstream))
        peak_bytes[name].append(traced_peak(route, token_ids, table, upstream))

print(f"{'V':>7} | {'one-hot ms':>10} {'lookup ms':>9} {'ratio':>6} | "
      f"{'one-hot bytes':>13} {'lookup bytes':>12} {'ratio':>6}")
for k, vocab_size in enumerate(vocab_sizes):
    t1, t2 = seconds["one-hot @ E"][k], seconds["lookup E[ids]"][k]
    b1, b2 = held_bytes["one-hot @ E"][k], held_bytes["lookup E[ids]"][k]
    print(f"{vocab_size:>7} | {1e3 * t1:>10.3f} {1e3 * t2:>9.3f} {t1 / t2:>6.1f} | "
          f"{b1:>13,} {b2:>12,} {b1 / b2:>6.0f}")

# %%
fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(10, 4))
for name, style in zip(routes, ["o-", "s-"]):
    ax_time.loglog(vocab_sizes, seconds[name], style, label=name)
    line = ax_mem.loglog(vocab_sizes, held_bytes[name], style, label=f"{name}: counted")[0]
    ax_mem.loglog(vocab_sizes, peak_bytes[name], "x--", color=line.get_color(),
                  label=f"{name}: tracemalloc peak")
ax_time.set(xlabel="vocabulary size V", ylabel=f"seconds (forward + backward, best of {REPEATS})",
            title=f"Time, {N_TOKENS} tokens, d={WIDTH}")
ax_mem.set(xlabel="vocabulary size V", ylabel="bytes", title="Memory held by each route")
for ax in (ax_time, ax_mem):
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
lesson.save(fig, "lookup_vs_onehot_cost.png",
            "time and memory of a lookup against a one-hot product as V grows: the one-hot route "
            "grows with V, the lookup does not")

# %% [markdown]
# ## The reveal
#
# First guess: the gradients are the same. Nothing leaks onto unread rows.
#
# Second guess: the one-hot route's bytes are `4 N V + 4 V d`. Both terms grow with `V`, so
# its curve climbs with slope one on the log-log plot. The lookup route holds `8 N` bytes of
# ids and at most `N` rows of gradient (each `4 d` bytes plus an 8-byte index), whatever `V`
# is, so its curve is flat. The ratio therefore grows in proportion to `V`: about 300 at
# V = 16,384 and about 1,200 at V = 65,536 (the full run; `MINIGRAD_SMALL=1` stops at 16,384).
# At the scale of a large model (V = 120,000, d = 4,096) one dense float32 gradient for the
# table alone is close to 2 GB.
#
# Time follows the arithmetic: the product does `V` times more multiply-adds than the lookup
# copies. At `V = 120,000` that arithmetic ratio is the "hundred thousand times cheaper" one
# sometimes quoted for gathering rows. Our measured time ratio is smaller than `V`, because the
# lookup's hundred-odd microseconds are mostly Python and bookkeeping, not arithmetic. What the
# plot shows is the shape, flat versus climbing. (On a busy machine the smallest products can
# be slowed by waiting for BLAS threads; the memory panel does not have that noise.)
#
# The assertions below make these statements measured checks.

# %%
onehot_bytes, lookup_bytes = held_bytes["one-hot @ E"], held_bytes["lookup E[ids]"]
growth = vocab_sizes[-1] / vocab_sizes[0]
# the one-hot route's memory grows in proportion to V ...
assert onehot_bytes[-1] / onehot_bytes[0] > 0.9 * growth, "one-hot memory should grow like V"
# ... while the lookup's never exceeds the ids plus one (index, row) pair per token
lookup_bound = N_TOKENS * 8 + N_TOKENS * (8 + 4 * WIDTH)
assert all(b <= lookup_bound for b in lookup_bytes), "lookup memory should not depend on V"
memory_ratio = onehot_bytes[-1] / lookup_bytes[-1]
assert memory_ratio > 100, f"expected the one-hot route to hold >100x the bytes, got {memory_ratio:.0f}x"
# tracemalloc confirms the one-hot matrix was really allocated during the pass
assert peak_bytes["one-hot @ E"][-1] >= N_TOKENS * vocab_sizes[-1] * 4
# time: one loose claim only. Timings on a busy machine are noisy (a small matrix product can
# stall waiting for BLAS threads), so exact speed ratios belong in benchmarks/, not here.
time_ratio = seconds["one-hot @ E"][-1] / seconds["lookup E[ids]"][-1]
assert time_ratio > 5, f"expected the lookup to be much faster at V={vocab_sizes[-1]}, got {time_ratio:.1f}x"
full_scale_grad = 120_000 * 4096 * 4
print(f"at V={vocab_sizes[-1]:,}: one-hot holds {memory_ratio:.0f}x the bytes and takes {time_ratio:.0f}x "
      f"the time; multiply-adds ratio = V = {vocab_sizes[-1]:,}")
print(f"a dense float32 gradient for a 120,000 x 4,096 table: {full_scale_grad / 1e9:.2f} GB")

# %% [markdown]
# ## Why this matters for the next lessons
#
# Since the lookup is a matrix product, the table is a weight like any other, and its gradient
# comes from the rule every matrix product follows, `dL/dE = O^T G`. No one chose to make that
# gradient sparse: it is sparse because `O` is mostly zeros. Lesson 4 follows
# those zeros across a whole training run.
#
# ## What the comparison ran on
#
# The gradient set beside both routes came from the `table_grad_from_one_hot` named where it
# was built: yours, once your copy of the exercise passed `minigrad check 3`. To write it or
# change it: `minigrad exercise 3`, then `minigrad check 3` (or `minigrad check 3 --file
# my_copy.py`; in a notebook, `minigrad.check(3, globals())`), then run this lesson again.
