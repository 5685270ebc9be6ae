"""In our own words: no run of the material's wording outside quotation marks.

The project teaches two source texts (the concept page and the essay, in shared/seeds/ beside
the checkout). Our prose may quote them, inside quotation marks, and otherwise says things in
its own words. This test scans every piece of prose we ship (lessons, docs, README, and the
strings and comments of minigrad/) for runs of MIN_RUN or more consecutive words that also
occur, in the same order, in a seed text, after lower-casing and dropping punctuation. Text
inside double quotation marks ("..." or curly quotes) is skipped: that is quoting. So is code:
fenced blocks and `inline code` in markdown (a vocabulary list is data, not wording).

Run it as a script to list every hit: `python tests/test_own_words.py`.
The seeds are found through $MINIGRAD_SEEDS or the nearest shared/seeds/ above the checkout;
without them the scan is skipped (the mechanism tests below still run).
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIN_RUN = 6
# Curly and straight double quotes; single quotes are apostrophes too often to delimit quotes.
QUOTED = re.compile(r'"[^"\n]*(?:\n[^"\n]*){0,3}"|“[^”]*”')
FENCED = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]+`")
WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def words(text: str) -> list[str]:
    """Lower-case words, punctuation dropped; curly apostrophes read as straight ones."""
    return WORD.findall(text.lower().replace("’", "'").replace("‘", "'"))


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def unquoted(text: str) -> str:
    """The text with quoted spans and inline `code` blanked out (line breaks kept)."""
    return QUOTED.sub(_blank, INLINE_CODE.sub(_blank, text))


def seed_runs(seed_texts: list[str], n: int = MIN_RUN) -> set[tuple[str, ...]]:
    """Every run of n consecutive words in the seed texts."""
    runs: set[tuple[str, ...]] = set()
    for text in seed_texts:
        w = words(text)
        runs.update(tuple(w[i:i + n]) for i in range(len(w) - n + 1))
    return runs


def shared_runs(text: str, runs: set[tuple[str, ...]], n: int = MIN_RUN) -> list[tuple[int, str]]:
    """(line, phrase) for each maximal run of >= n words of `text` found in `runs`.

    Line numbers count from 1 within `text`; quoted spans are not searched. A run made mostly
    of one-letter words (the letters of a formula such as `sum_i (p_i - y_i) w_i`) is
    notation, not wording, and is not reported.
    """
    plain = unquoted(text)
    found = [(m.group(0), plain.count("\n", 0, m.start()) + 1)
             for m in WORD.finditer(plain.lower().replace("’", "'"))]
    toks = [w for w, _ in found]
    hits, i = [], 0
    while i <= len(toks) - n:
        if tuple(toks[i:i + n]) in runs:
            j = i + n
            while j < len(toks) and tuple(toks[j - n + 1:j + 1]) in runs:
                j += 1
            if sum(len(w) == 1 for w in toks[i:j]) * 2 <= j - i:  # words, not a formula's letters
                hits.append((found[i][1], " ".join(toks[i:j])))
            i = j
        else:
            i += 1
    return hits


def python_prose(source: str) -> str:
    """Comments and string contents of a Python file, each on its own line numbers.

    A string's own delimiters are dropped (they are syntax, not quotation marks); quotation
    marks inside a string or comment still count. Code, and strings holding a single word
    (keys, names, a vocabulary list), are left out.
    """
    lines = [""] * (source.count("\n") + 2)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            body = tok.string.lstrip("#")
        elif tok.type == tokenize.STRING:
            body = re.sub(r'^[rbuRBUfF]*("""|\'\'\'|"|\')|("""|\'\'\'|"|\')$', "", tok.string)
            if not re.search(r"\s", body):
                continue  # one word, a key or a name: data, not prose
        else:
            continue
        for k, part in enumerate(body.split("\n")):
            lines[tok.start[0] - 1 + k] += " " + part
    return "\n".join(lines)


def prose_files(root: Path = ROOT) -> list[Path]:
    """Every file whose prose we ship: lessons/, docs/, README.md and minigrad/."""
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    for folder in ("lessons", "minigrad"):
        files += sorted((root / folder).rglob("*.py"))
        files += sorted((root / folder).rglob("*.md"))
    return [f for f in files if f.is_file()]


def scan(root: Path, runs: set[tuple[str, ...]]) -> list[str]:
    """'path:line: phrase' for every shared run in the prose under `root`."""
    out = []
    for path in prose_files(root):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            text = python_prose(text)
        else:  # markdown: fenced code is code
            text = FENCED.sub(_blank, text)
        out += [f"{path.relative_to(root)}:{line}: {phrase}" for line, phrase in shared_runs(text, runs)]
    return out


def find_seeds() -> Path | None:
    """$MINIGRAD_SEEDS, else the nearest shared/seeds/ in a folder above the checkout."""
    if os.environ.get("MINIGRAD_SEEDS"):
        return Path(os.environ["MINIGRAD_SEEDS"])
    for parent in ROOT.parents:
        if (parent / "shared" / "seeds").is_dir():
            return parent / "shared" / "seeds"
    return None


# ---- the mechanism --------------------------------------------------------------------------

SEED = "The word that nearly won is shoved hard. A word the model already considered impossible."


def test_a_shared_run_is_found_whatever_the_case_and_punctuation():
    runs = seed_runs([SEED])
    hits = shared_runs("Intro.\nThen: the WORD that nearly won, is shoved -- hard; we say.", runs)
    assert hits == [(2, "the word that nearly won is shoved hard")]


def test_a_quoted_run_and_a_short_run_are_not_hits():
    runs = seed_runs([SEED])
    assert shared_runs('As the essay puts it, "the word that nearly won is shoved hard".', runs) == []
    assert shared_runs("As the essay puts it, “the word that nearly won is shoved hard”.", runs) == []
    assert shared_runs("the word that nearly won, we said", runs) == []  # five words only


def test_python_prose_reads_comments_and_strings_but_not_code():
    src = ('x = the_word_that(nearly, won)  # the word that nearly won is shoved hard\n'
           's = "ok then"; key = "word"\n')
    prose = python_prose(src)
    assert "the_word_that" not in prose and "ok then" in prose.splitlines()[1]
    assert "word" not in prose.splitlines()[1]  # a one-word string is a key, not prose
    assert shared_runs(prose, seed_runs([SEED])) == [(1, "the word that nearly won is shoved hard")]


def test_inline_code_is_not_wording():
    runs = seed_runs([SEED])
    assert shared_runs("the list `the word that nearly won is shoved` is data", runs) == []


def test_a_run_inside_a_docstring_is_found_on_its_line():
    src = 'def f():\n    """Shapes.\n\n    A word the model already considered impossible.\n    """\n'
    assert shared_runs(python_prose(src), seed_runs([SEED])) == [
        (4, "a word the model already considered impossible")]


# ---- the scan -------------------------------------------------------------------------------

def test_our_prose_shares_no_run_of_the_materials_wording_outside_quotes():
    seeds = find_seeds()
    if seeds is None or not any(seeds.glob("*.txt")):
        pytest.skip("the seed texts (shared/seeds/) are not beside this checkout")
    runs = seed_runs([p.read_text(encoding="utf-8") for p in sorted(seeds.glob("*.txt"))])
    hits = scan(ROOT, runs)
    assert not hits, (f"{len(hits)} run(s) of {MIN_RUN}+ words taken from the material without "
                      "quotation marks; reword or quote them:\n" + "\n".join(hits))


if __name__ == "__main__":
    seeds = find_seeds()
    if seeds is None:
        raise SystemExit("no shared/seeds/ found; set MINIGRAD_SEEDS")
    for hit in scan(ROOT, seed_runs([p.read_text(encoding="utf-8") for p in sorted(seeds.glob("*.txt"))])):
        print(hit)
