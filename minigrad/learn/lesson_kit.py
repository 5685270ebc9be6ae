"""Everything a lesson imports from one place (`from minigrad.learn.lesson_kit import setup, ...`).

The pieces live in four modules, re-exported here so the lessons' imports stay short:

- `lesson_setup`: `setup(N)` and its `LessonSetup` (BLAS cap, headless drawing, the figure
  folder, the fast mode, the lesson's sizes chosen in one place, figures saved with a caption);
- `lesson_geometry`: `spearman`, `unit_rows`, `pair_cosines`, `mean_cosine`, `cone`,
  `principal_axes`;
- `lesson_plots`: `draw_cone`, `draw_frequency_axis`;
- `lesson_training`: `warmup_cosine`, `split_paths`, `classifier_share`, `train_on_text`,
  `tables_of`, `predicts_every_position`, `fit_scheduled`.
"""

from minigrad.engine import tensor
from minigrad.learn.lesson_geometry import (
    average_ranks,
    cone,
    mean_cosine,
    pair_cosines,
    principal_axes,
    spearman,
    unit_rows,
)
from minigrad.learn.lesson_plots import draw_cone, draw_frequency_axis
from minigrad.learn.lesson_setup import (
    DEFAULT_BLAS_THREADS,
    LessonSetup,
    blas_thread_cap,
    cap_blas_threads,
    expected_duration,
    in_notebook,
    setup,
)
from minigrad.learn.lesson_training import (
    classifier_share,
    fit_scheduled,
    predicts_every_position,
    split_paths,
    tables_of,
    tied_share_curve,
    train_on_text,
    warmup_cosine,
)

__all__ = [
    "DEFAULT_BLAS_THREADS", "LessonSetup", "average_ranks", "blas_thread_cap", "cap_blas_threads",
    "classifier_share", "cone", "draw_cone", "draw_frequency_axis", "expected_duration",
    "fit_scheduled", "in_notebook", "mean_cosine", "pair_cosines", "predicts_every_position",
    "principal_axes", "setup", "spearman", "split_paths", "tables_of", "tensor", "tied_share_curve",
    "train_on_text", "unit_rows", "warmup_cosine",
]
