"""Everything a lesson imports from one place (`from minigrad.learn.lesson_kit import setup, ...`).

The pieces live in four modules, re-exported here so the lessons' imports stay short:

- `lesson_setup`: `setup(N)` and its `LessonSetup` (BLAS cap, headless drawing, the figure
  folder, the fast mode, the lesson's sizes chosen in one place, figures saved with a caption);
- `lesson_geometry`: `spearman`, `unit_rows`, `pair_cosines`, `mean_cosine`, `cone`,
  `principal_axes`, and a table's geometry along a run (`centred_cosines`, `nearest_rows`,
  `share_done`, `geometry_similarity`, `geometry_done`);
- `lesson_plots`: `draw_cone`, `draw_frequency_axis`;
- `lesson_training`: `warmup_cosine`, `split_paths`, `classifier_share`, `train_on_text`,
  `tables_of`, `predicts_every_position`, `fit_scheduled`, and the checks behind lesson 11's
  settling and freezing verdicts (`freezing_cost_share`, `freezing_is_free`, `ahead_of_the_loss`).
"""

from minigrad.engine import tensor
from minigrad.learn.lesson_geometry import (
    average_ranks,
    centred_cosines,
    cone,
    geometry_done,
    geometry_similarity,
    mean_cosine,
    nearest_rows,
    pair_cosines,
    principal_axes,
    share_done,
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
    ahead_of_the_loss,
    classifier_share,
    fit_scheduled,
    freezing_cost_share,
    freezing_is_free,
    predicts_every_position,
    split_paths,
    tables_of,
    tied_share_curve,
    train_on_text,
    warmup_cosine,
)

__all__ = [
    "DEFAULT_BLAS_THREADS", "LessonSetup", "ahead_of_the_loss", "average_ranks", "blas_thread_cap",
    "cap_blas_threads", "centred_cosines", "classifier_share", "cone", "draw_cone", "draw_frequency_axis",
    "expected_duration", "fit_scheduled", "freezing_cost_share", "freezing_is_free", "geometry_done",
    "geometry_similarity",
    "in_notebook", "mean_cosine", "nearest_rows", "pair_cosines", "predicts_every_position",
    "principal_axes", "setup", "share_done", "spearman", "split_paths", "tables_of", "tensor",
    "tied_share_curve", "train_on_text", "unit_rows", "warmup_cosine",
]
