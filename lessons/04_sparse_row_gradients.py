# %% [markdown]
# # Lesson 4: Only the rows a batch reads get a gradient
#
# A table row's gradient is the sum over the positions that read it and exactly zero elsewhere.
#
# ## What you will see
#
# Lesson 3 showed that the lookup's gradient is `O^T G`. Here you write that gradient yourself,
# as a minigrad `Function`, and the lesson then runs on your lookup.
#
# - In one batch: a row's gradient adds up the upstream vectors of every position where
#   its token appeared, and an exact zero for every token that did not appear. minigrad returns
#   it as a `RowSparse` (indices, values), which costs bytes in proportion to the batch, not to
#   the vocabulary.
# - A classic bug that silently keeps only one occurrence of a repeated id (after you have
#   tried the exercise).
# - Over a training run: with token frequencies that follow Zipf's law (the r-th most common
#   token appears about `1/r` as often as the most common), a few rows are updated on every
#   step while most wait a long time between updates. We measure how lopsided this gets, and
#   how that depends on the vocabulary size and on the amount of text.

# %% [markdown]
# ## Predict first
#
# A batch reads the ids `[[1, 3, 1, 6]]` from a table of 8 rows. Which rows of the gradient are
# nonzero, and how is row 1's gradient related to the upstream vectors at positions 0 and 2?
#
# Then a bigger question. Tokens are drawn from a Zipf law over a vocabulary of 120,000 entries.
# Count, for each row, how many gradient contributions it receives. Among the rows that were
# seen at all, what is the ratio between the busiest row's count and the quietest row's count
# after 10 million tokens, and after 10 billion? Does it keep growing with more text?

# %%
import matplotlib.pyplot as plt
import numpy as np

import minigrad as mg
from minigrad import whose
from minigrad.learn.course import yours
from minigrad.learn.kit import setup
from minigrad.nn import functional as F

lesson = setup(4)  # caps BLAS threads, draws headless, makes OUT
OUT = lesson.out
rng = np.random.default_rng(4)
size = lesson.sizes(  # every size the lesson uses, full and small (MINIGRAD_SMALL=1), in one place
    full=dict(run_V=50_000, run_batch=1024, run_steps=2000, top_decade=10, sweep_points=25,
              sweep_vocabs=[1_000, 10_000, 120_000, 1_000_000]),
    small=dict(run_V=20_000, run_batch=512, run_steps=400, top_decade=9, sweep_points=21,
              sweep_vocabs=[1_000, 10_000, 120_000]))
pieces = yours(4)  # your Embedding from minigrad-exercises/, if it passes `minigrad check 4`

# %% [markdown]
# ## Build it: the lookup and its backward
#
# Run `minigrad exercise 4`: it copies the stub to
# `minigrad-exercises/04_sparse_row_gradients.py`, in the folder you run it from (in a
# notebook, define the class in a cell instead and run `minigrad.check(4, globals())`).
# There, write `Embedding`, a minigrad `Function` with the same signature as minigrad's own
# lookup: `forward(ctx, weight, ids, sparse=True, padding_idx=None)` returns `weight[ids]`,
# and `backward(ctx, grad)` returns the table's gradient as a `RowSparse` that names each row
# the batch read once, with its gradient, and `None` for the ids. Then run `minigrad check 4`:
# it compares your backward with finite differences, row by row, names the row that is off,
# and tries the cases that trip most people up.
#
# The line printed above says whose `Embedding` this lesson runs. Once your copy passes its
# check, every lookup below goes through yours (`pieces.use()` puts it in place of minigrad's
# with `minigrad.use(Embedding=...)`), and its backward node is called
# `EmbeddingBackward (yours)`. Until then the lesson runs minigrad's and says why.
# In a notebook, `pieces = yours(4, globals())` in the setup cell marks and uses the
# definitions of your notebook instead of the file.

# %% [markdown]
# ## One batch, read row by row

# %%
V, d = 8, 3
ids = np.array([[1, 3, 1, 6]])  # id 1 is read twice; ids 0, 2, 4, 5, 7 never
emb = mg.nn.Embedding(V, d, sparse=True, dtype=np.float64, rng=0)
upstream = rng.standard_normal((1, 4, d))  # dL/d(output), one vector per position

with pieces.use():
    assert (whose("Embedding") == "yours") == pieces.are_yours  # else minigrad's
    out = emb(ids)
    print("the lookup's backward node:", out.grad_fn.name)  # named while it runs
    out.backward(upstream)
grad = emb.weight.grad
print(grad)
print("indices:", grad.indices)
print("values:\n", grad.values)
print("nnz_rows:", grad.nnz_rows, "| bytes as RowSparse:", grad.nbytes,
      "| bytes as a dense (V, d) array:", grad.to_dense().nbytes)

# %%
dense = grad.to_dense()
assert np.allclose(dense[1], upstream[0, 0] + upstream[0, 2]), "row 1 sums its two occurrences"
assert np.allclose(dense[3], upstream[0, 1]) and np.allclose(dense[6], upstream[0, 3])
untouched = [0, 2, 4, 5, 7]
assert np.all(dense[untouched] == 0.0), "rows nobody read must be exactly zero"
assert grad.nnz_rows == 3 and set(grad.indices) == {1, 3, 6}
print("row 1 = upstream at position 0 + upstream at position 2; rows", untouched, "are exactly 0")

# %% [markdown]
# The `RowSparse` keeps three rows: the three distinct ids. Row 1 is one row holding the sum
# of two upstream vectors: the backward adds repeated ids together.
#
# The dense layout (`Embedding(..., sparse=False)`) carries the same numbers. Adding a repeated
# id by hand is where a bug hides: numpy's `dense[ids] += g` reads each row once, adds one
# vector, and writes it back, so when an id repeats, only the last write survives.
# `np.add.at` performs every addition.

# %%
dense_emb = mg.nn.Embedding(V, d, sparse=False, dtype=np.float64, rng=0)
with pieces.use():
    dense_emb(ids).backward(upstream)
assert isinstance(dense_emb.weight.grad, np.ndarray)
assert np.array_equal(dense_emb.weight.grad, dense), "sparse and dense layouts must agree"

flat_ids, flat_upstream = ids.reshape(-1), upstream.reshape(-1, d)
buggy = np.zeros((V, d))
buggy[flat_ids] += flat_upstream  # buffered: a repeated id keeps one occurrence
correct = np.zeros((V, d))
np.add.at(correct, flat_ids, flat_upstream)  # unbuffered: every occurrence is added
assert np.allclose(correct, dense)
assert np.allclose(buggy[1], upstream[0, 2]) and not np.allclose(buggy[1], dense[1])
print("grad[ids] += g kept only the last occurrence of id 1:", buggy[1], "instead of", dense[1])

# %% [markdown]
# ## Check against finite differences
#
# The repeated id and the untouched rows are exactly where a wrong backward would show up, so
# the check perturbs every entry of the table, including rows 1 and 0.

# %%
table = mg.tensor(rng.standard_normal((V, d)), requires_grad=True, name="E")
with pieces.use():
    print(mg.gradcheck(lambda t: F.embedding(ids, t), [table]))

# %% [markdown]
# ## What the sparse layout saves
#
# The bytes of a `RowSparse` depend on how many distinct ids a batch holds, not on `V`.
# For a realistic table (V = 50,000, d = 512, float32) and a batch of 2,048 tokens:

# %%
big_V, big_d, batch_tokens = 50_000, 512, 2048
big = mg.nn.Embedding(big_V, big_d, sparse=True, rng=1)
batch = rng.integers(0, big_V, batch_tokens)
with pieces.use():
    big(batch).backward(np.ones((batch_tokens, big_d), dtype=np.float32))
sparse_bytes, dense_bytes = big.weight.grad.nbytes, big_V * big_d * 4
print(f"RowSparse: {big.weight.grad.nnz_rows} rows, {sparse_bytes:,} bytes; "
      f"dense: {dense_bytes:,} bytes ({dense_bytes / sparse_bytes:.0f}x more)")
assert big.weight.grad.nnz_rows == len(np.unique(batch))
assert dense_bytes > 20 * sparse_bytes

# %% [markdown]
# ## Many steps of Zipf-distributed text
#
# Natural text is lopsided: the most common token is far more common than the thousandth.
# We model it with Zipf's law, `p(rank r) = r^(-s) / H`, with exponent `s = 1` (the classic
# value for word frequencies) and `H` the normaliser. We run the embedding's forward and
# backward for many steps of sampled tokens and count, per row:
#
# - **contributions**: how many positions sent it a gradient vector (its occurrences), and
# - **update steps**: on how many steps its row appeared in the `RowSparse` at all.


# %%
def zipf_probabilities(vocab_size: int, exponent: float = 1.0) -> np.ndarray:
    """p[r-1] proportional to r^(-exponent), for ranks r = 1..V."""
    weights = np.arange(1, vocab_size + 1, dtype=np.float64) ** -exponent
    return weights / weights.sum()


def sample_tokens(cdf: np.ndarray, count: int) -> np.ndarray:
    # the first rank whose cumulative probability exceeds a uniform draw; clip float round-off
    return np.minimum(np.searchsorted(cdf, rng.random(count), side="right"), cdf.size - 1)


# %%
run_V, run_batch, run_steps = size.run_V, size.run_batch, size.run_steps
probs = zipf_probabilities(run_V)
cdf = np.cumsum(probs)
table = mg.nn.Embedding(run_V, 8, sparse=True, rng=2)
contributions = np.zeros(run_V, dtype=np.int64)
update_steps = np.zeros(run_V, dtype=np.int64)
with pieces.use():  # every step's backward is your Embedding's, once it passes its check
    for _ in range(run_steps):
        tokens = sample_tokens(cdf, run_batch)
        out = table(tokens)
        out.backward(np.ones(out.shape, dtype=np.float32))
        rows = table.weight.grad.indices  # the rows this step's gradient names
        assert np.array_equal(np.sort(rows), np.unique(tokens)), "the gradient names exactly the rows read"
        update_steps[rows] += 1
        contributions += np.bincount(tokens, minlength=run_V)
        table.weight.grad = None

# %%
seen = contributions > 0
busiest, quietest = contributions.max(), contributions[seen].min()
print(f"V={run_V:,}, {run_steps} steps of {run_batch} tokens = {run_steps * run_batch:,} tokens")
print(f"rows never seen: {np.mean(~seen):.1%}")
print(f"contributions: busiest {busiest:,}, quietest seen {quietest}, ratio {busiest / quietest:,.0f}:1")
print(f"update steps:  busiest {update_steps.max()}, quietest seen {update_steps[seen].min()}, "
      f"ratio {update_steps.max() / update_steps[seen].min():,.0f}:1")

assert contributions.sum() == run_steps * run_batch
assert update_steps[0] == run_steps, "the most common token should be updated on every step"
assert np.all(update_steps[~seen] == 0) and np.all(update_steps <= contributions)

# %%
ranks = np.arange(1, run_V + 1)
expected_contributions = run_steps * run_batch * probs
expected_steps = run_steps * (1 - (1 - probs) ** run_batch)  # chance a row shows up in a step
fig, ax = plt.subplots(figsize=(7, 4.5))
ax.loglog(ranks[seen], contributions[seen], ".", ms=2, alpha=0.4, label="contributions (measured)")
ax.loglog(ranks[seen], update_steps[seen], ".", ms=2, alpha=0.4, label="update steps (measured)")
ax.loglog(ranks, expected_contributions, "k--", lw=1, label="Zipf: tokens x p(r)")
ax.loglog(ranks, expected_steps, "k:", lw=1, label="Zipf: steps x P(r in a batch)")
ax.set(xlabel="token rank r (1 = most common)", ylabel="count per row",
       title=f"Per-row gradient traffic, V={run_V:,}, {run_steps} steps x {run_batch} tokens")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8, markerscale=4)
lesson.save(fig, "updates_per_row.png",
            "gradient traffic per row against the token's rank: common rows get updates on every "
            "step, rare rows almost never (Zipf guides dashed and dotted)")

# %% [markdown]
# Two regimes are visible. The head of the vocabulary appears in every batch: its update-step
# count is flat at the number of steps, while its contributions keep following Zipf's line. The
# tail appears rarely: there an update step and a contribution are the same event, and the
# dots fall to 1 or vanish (a row that was never seen is not plotted).
#
# ## How lopsided can it get?
#
# The ratio above depends on how much text we simulated. To see how it scales we need far more
# tokens than we can push through a training loop, so for this part we count without training:
# drawing `N` tokens independently and counting each row is the same random experiment as a
# single multinomial draw of `N` over the Zipf probabilities, which numpy does in time
# proportional to `V`, whatever `N` is. For several vocabularies and corpus sizes up to ten
# billion tokens we record the busiest row's count divided by the quietest seen row's count.

# %%
sweep_vocabs = size.sweep_vocabs
corpus_sizes = np.logspace(4, size.top_decade, size.sweep_points)  # four points per decade
ratios = {}
for vocab_size in sweep_vocabs:
    p = zipf_probabilities(vocab_size)
    row = []
    for n in corpus_sizes:
        counts = rng.multinomial(int(n), p)
        row.append(counts.max() / counts[counts > 0].min())
        if n * p[0] >= 500:  # the busiest count is a well-measured N p_1 (sd under 5%)
            assert abs(counts.max() / (n * p[0]) - 1) < 0.15
    ratios[vocab_size] = np.array(row)

# %%
fig, ax = plt.subplots(figsize=(7.5, 4.8))
for vocab_size in sweep_vocabs:
    line = ax.loglog(corpus_sizes, ratios[vocab_size], "o-", ms=3, label=f"V = {vocab_size:,}")[0]
    ax.axhline(vocab_size, color=line.get_color(), ls=":", lw=1)  # p_1 / p_V = V^s with s = 1
    ax.loglog(corpus_sizes, corpus_sizes * zipf_probabilities(vocab_size)[0], "--",
              color=line.get_color(), lw=0.8)
ax.axhline(1e6, color="k", lw=1.5, alpha=0.5)
ax.text(corpus_sizes[0], 1.3e6, "a million to one", fontsize=8)
ax.set_ylim(top=5 * max(r.max() for r in ratios.values()))  # the dashed guides run off upwards
ax.set(xlabel="tokens seen N", ylabel="busiest row / quietest seen row (contributions)")
ax.set_title("Zipf, s = 1. Dashed: N p_1 (quietest seen once). Dotted: V^s (all rows seen often)",
             fontsize=10)
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
lesson.save(fig, "busiest_to_quietest_ratio.png",
            "how many times more gradient the busiest row gets than the quietest seen row, as more "
            "tokens are seen")

# %%
print(f"{'V':>10} {'peak ratio':>11} {'at N':>8} {'ratio at largest N':>19} {'V^s':>10}")
for vocab_size in sweep_vocabs:
    k = int(np.argmax(ratios[vocab_size]))
    print(f"{vocab_size:>10,} {ratios[vocab_size][k]:>11,.0f} {corpus_sizes[k]:>8.1e} "
          f"{ratios[vocab_size][-1]:>19,.0f} {vocab_size:>10,}")

# %% [markdown]
# ## The reveal
#
# The ratio among seen rows moves through three phases as the corpus grows.
#
# 1. **Growing with the corpus.** While the tail is still being discovered, the quietest seen
#    row has been seen once, so the ratio is simply the busiest row's count, `N p_1` (the dashed
#    lines). More text, bigger ratio.
# 2. **A peak.** Once `N` is large enough that even the rarest rows show up a few times, the
#    quietest count rises. The ratio peaks near `N ~ 1/p_V` at a few times `V^s`.
# 3. **Capped by the vocabulary.** With plenty of text every row's count is close to
#    `N p_r`, and the ratio settles at `p_1 / p_V = V^s` (the dotted lines), whatever `N` is.
#
# So the ratio grows with the vocabulary without limit, but with the corpus only until the tail
# has been seen. For the prediction: at V = 120,000, after 10 million tokens the ratio is near
# its peak, roughly a million to one (the exact value depends on whether some row has been seen
# only once); after 10 billion tokens it has settled at about 1.2 x 10^5 to one. More text made
# it smaller. The essay this course draws on says the ratio of update opportunities between
# the busiest and quietest rows "can run to a million to one". Our measurement agrees with that
# as a possibility, not as a consequence of Zipf's law at that essay's vocabulary size:
#
# - with `s = 1` and V = 120,000 the settled ratio is about 1.2 x 10^5; the million is only
#   passed briefly, near the peak, if at all (the table above shows the peak on our grid);
# - with `s = 1` a settled million to one needs V of about 10^6 (the full run measures it);
# - at V = 120,000 a settled million to one needs an exponent of about 1.18 (120,000^1.18 is
#   about 10^6), or a tail rarer than Zipf predicts. Real subword vocabularies do have such a
#   tail: some tokens are almost absent from the training text. We did not measure a real corpus.
#
# Counting update steps instead of contributions caps the ratio lower still: the busiest row
# can be updated at most once per step, so that ratio can never exceed the number of steps.
#
# The checks below turn the three phases into measured statements.

# %%
for vocab_size in sweep_vocabs:
    p = zipf_probabilities(vocab_size)
    ceiling = p[0] / p[-1]  # = V^s
    settled = ratios[vocab_size][-1]
    # phase 3: with the rarest row expected 100+ times, the ratio sits near V^s
    if corpus_sizes[-1] * p[-1] >= 100:
        assert 0.8 * ceiling <= settled <= 2 * ceiling, f"V={vocab_size}: {settled:.0f} vs V^s={ceiling:.0f}"
    # phase 1: while the tail is unseen, the ratio is the busiest count, about N p_1
    first = ratios[vocab_size][0]
    assert first <= 1.15 * corpus_sizes[0] * p[0]
    # phase 2: the peak overshoots the settled value for large vocabularies
    if vocab_size >= 10_000:
        assert ratios[vocab_size].max() >= 1.5 * ceiling, f"V={vocab_size}: no overshoot"
settled_ratios = [ratios[v][-1] for v in sweep_vocabs]
assert all(a < b for a, b in zip(settled_ratios, settled_ratios[1:])), "bigger vocabularies, bigger ratio"
if 1_000_000 in ratios:
    assert ratios[1_000_000][-1] >= 0.8e6, "V = 10^6 with s = 1 should settle near a million to one"

# %%
# the exponent an essay-sized vocabulary needs for a settled million to one
needed_exponent = np.log(1e6) / np.log(120_000)
steep = rng.multinomial(10**10, zipf_probabilities(120_000, needed_exponent))
steep_ratio = steep.max() / steep[steep > 0].min()
print(f"V=120,000 needs s = {needed_exponent:.2f}; measured with 10^10 tokens: {steep_ratio:,.0f}:1")
assert steep_ratio > 0.7e6

# %% [markdown]
# ## Your Embedding, looking back
#
# Every gradient of this lesson's first half, the gradcheck and the many-step traffic count
# came from the `Embedding` named at the top: yours, when your copy of the exercise passed
# `minigrad check 4`. If the check stopped you at "row 1 got the gradient of one occurrence",
# the buffered `+=` above is why; if it refused `RowSparse.coalesce()`, it is because summing
# the repeated rows is the very step this lesson is about.
