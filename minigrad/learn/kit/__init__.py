"""The lesson kit, one front door: everything a lesson imports (`from minigrad.learn.kit import setup, ...`).

The pieces live in modules that each hold one kind of thing, all re-exported here:

- `lesson`: `setup(N)` and its `LessonSetup` (BLAS cap, headless drawing, the figure folder, the
  small mode (`small_mode()`, MINIGRAD_SMALL=1), the lesson's sizes chosen in one place, figures
  saved with a caption);
- `geometry`: `spearman`, `unit_rows`, `rank_of_self`, `pair_cosines`, `mean_cosine`, `cone`,
  `principal_axes`,
  and a table's geometry along a run (`centred_cosines`, `nearest_rows`, `share_done`,
  `geometry_similarity`, `geometry_done`);
- `byte_pairs`: lesson 11's ladder of byte-pair vocabularies (`byte_pair_ladder`, on the learner's
  `merge_step` where it agrees with minigrad's trainer: `merges_with`);
- `plots`: `draw_cone`, `draw_frequency_axis`; `figures`: a figure shown inline in a notebook;
- `model_pieces`: `ModelPieces`, what the models of lessons 8 to 13 are built and trained with
  (the learner's pieces from lessons 4 to 8 where they pass, else minigrad's: `MINIGRADS`), and
  `minigrads_tie`;
- `training`: `warmup_cosine` (the optimizer layer's one schedule), `split_paths`,
  `classifier_and_lookup`, `classifier_share`, `tied_share_curve`, `train_on_text`, `tables_of`,
  `predicts_every_position`, `fit_scheduled`;
- `walks`: watching a backward walk (lesson 1): `watching`, `walk_order`, `node_label`; and
  lesson 3's `table_grad_by_backward`;
- `rare_rows`: lesson 7's `adam_step_after_silence` (on minigrad's Adam), `RowAdamW`,
  `lazy_adamw`, `row_gradient_noise`;
- `verdicts`: every verdict check of the course, each returning `{statement: holds}`, with
  `hold`, `holds` and `failures` to assert and read them.

The course machinery that runs lessons and marks exercises is minigrad.learn.course; it uses
the kit, never the other way round.
"""

from minigrad.engine import tensor
from minigrad.learn.kit.byte_pairs import byte_pair_ladder, merges_with
from minigrad.learn.kit.figures import save_figure, show_file
from minigrad.learn.kit.geometry import (
    average_ranks,
    centred_cosines,
    cone,
    geometry_done,
    geometry_similarity,
    mean_cosine,
    nearest_rows,
    pair_cosines,
    principal_axes,
    rank_of_self,
    share_done,
    spearman,
    unit_rows,
)
from minigrad.learn.kit.lesson import (
    DEFAULT_BLAS_THREADS,
    LessonSetup,
    ThreadCap,
    blas_thread_cap,
    cap_blas_threads,
    expected_duration,
    in_notebook,
    setup,
    small_mode,
)
from minigrad.learn.kit.model_pieces import MINIGRADS, MODEL_PIECES, ModelPieces, minigrads_tie
from minigrad.learn.kit.plots import draw_cone, draw_frequency_axis
from minigrad.learn.kit.rare_rows import RowAdamW, adam_step_after_silence, lazy_adamw, row_gradient_noise
from minigrad.learn.kit.training import (
    classifier_and_lookup,
    classifier_share,
    fit_scheduled,
    predicts_every_position,
    split_paths,
    tables_of,
    tied_share_curve,
    train_on_text,
    warmup_cosine,
)
from minigrad.learn.kit.verdicts import (
    T_975,
    Conditions,
    ahead_of_the_loss,
    busiest_to_quietest_on_real_text,
    cones_in_a_transformer,
    decay_in_a_language_model,
    decay_on_a_zipf_stream,
    failures,
    freezing_cost_share,
    freezing_is_free,
    frequency_axes_in_a_transformer,
    frequency_in_static_tables,
    function_words_share_more,
    gaps_over_the_questions,
    hold,
    holds,
    input_and_output_rows_weakly_related,
    mean_and_interval,
    near_misses_take_the_push,
    no_gap_shown,
    noise_and_the_ceiling,
    output_side,
    paper_scale,
    real_noise_sets_the_ceiling,
    skipgram_ahead_at_equal_text,
    t_interval,
    tied_compromise,
    tied_round_trip_returns_the_token,
    two_untied_maps,
    tying_in_tinygpt,
    tying_in_tinylm,
    untied_round_trip,
    welch_interval,
)
from minigrad.learn.kit.walks import node_label, table_grad_by_backward, walk_order, watching

__all__ = [
    "Conditions",
    "DEFAULT_BLAS_THREADS",
    "LessonSetup",
    "MINIGRADS",
    "MODEL_PIECES",
    "ModelPieces",
    "RowAdamW",
    "T_975",
    "adam_step_after_silence",
    "ahead_of_the_loss",
    "average_ranks",
    "ThreadCap", "blas_thread_cap",
    "busiest_to_quietest_on_real_text",
    "byte_pair_ladder",
    "cap_blas_threads",
    "centred_cosines",
    "classifier_and_lookup",
    "classifier_share",
    "cone",
    "cones_in_a_transformer",
    "decay_in_a_language_model",
    "decay_on_a_zipf_stream",
    "draw_cone",
    "draw_frequency_axis",
    "expected_duration",
    "failures",
    "fit_scheduled",
    "freezing_cost_share",
    "freezing_is_free",
    "frequency_axes_in_a_transformer",
    "frequency_in_static_tables",
    "function_words_share_more",
    "gaps_over_the_questions",
    "geometry_done",
    "geometry_similarity",
    "hold",
    "holds",
    "in_notebook",
    "input_and_output_rows_weakly_related",
    "lazy_adamw",
    "mean_and_interval",
    "mean_cosine",
    "merges_with",
    "minigrads_tie",
    "near_misses_take_the_push",
    "nearest_rows",
    "node_label",
    "no_gap_shown",
    "noise_and_the_ceiling",
    "output_side",
    "pair_cosines",
    "paper_scale",
    "predicts_every_position",
    "principal_axes",
    "rank_of_self",
    "real_noise_sets_the_ceiling",
    "row_gradient_noise",
    "save_figure",
    "setup",
    "share_done",
    "show_file",
    "skipgram_ahead_at_equal_text",
    "small_mode",
    "spearman",
    "split_paths",
    "t_interval",
    "table_grad_by_backward",
    "tables_of",
    "tensor",
    "tied_compromise",
    "tied_round_trip_returns_the_token",
    "tied_share_curve",
    "train_on_text",
    "two_untied_maps",
    "tying_in_tinygpt",
    "tying_in_tinylm",
    "unit_rows",
    "untied_round_trip",
    "walk_order",
    "warmup_cosine",
    "watching",
    "welch_interval",
]
