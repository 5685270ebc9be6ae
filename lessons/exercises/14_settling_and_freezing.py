"""Lesson 14 exercise: the pair a byte-pair vocabulary merges next.

Fill in the function below, then run `minigrad check 14`.
"""


def best_pair(split_counts: dict[tuple[str, ...], int]) -> tuple[str, str]:
    """The pair of adjacent pieces that byte-pair training merges next.

    split_counts: each word (with its leading space) written as a tuple of its current pieces,
                  mapped to how often the word occurs in the text, e.g.
                  {(" ", "t", "h", "e"): 3, (" ", "t", "o"): 1}.
    returns:      the pair (left piece, right piece) that occurs most often side by side inside
                  the words, each word's pairs counted as often as the word occurs. A word in
                  which a pair comes twice counts it twice. Pairs never span two words. A tie
                  goes to the pair that sorts last (Python's max of the tuples).

    Hints: add up a count per pair over the words; max(counts, key=lambda pair: (counts[pair], pair)).
    """
    raise NotImplementedError("lesson 14: write best_pair(split_counts)")
