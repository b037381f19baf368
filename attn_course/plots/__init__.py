"""The course's figures, one module per topic; every name is re-exported from ``attn_course``.

* ``heatmaps``       ``show_heatmaps`` and the pieces every figure shares
* ``pooling``        attention pooling (notebook 01)
* ``interpolation``  Lagrange against Nadaraya-Watson (notebook 02)
* ``scoring``        softmax saturation (notebook 03)
* ``selfattention``  the matrices of the worked example, step by step (notebook 04)
* ``gallery``        heatmap patterns and the masking demo (notebook 05)
* ``models``         multi-head attention, positional encoding and the Transformer (notebooks 06, 08)
* ``training``       training curves, accuracy by length, alignments, greedy decoding (notebook 07)
* ``decoder``        the decoder-only model (notebook 09)
* ``efficient``      efficient attention: memory, tiles, the IO model (notebook 10)
* ``rotary``         RoPE's angles and scores, ALiBi's bias, the extrapolation experiment (notebook 11)
* ``linear``         linear attention (notebook 12)

Every function takes ``ax=None`` (or ``axes=None``), draws on a new figure when none is given, returns the
``Figure``, labels its axes, and never calls ``plt.show()`` or changes global matplotlib settings. A figure that a
slider panel updates in place says so in its docstring (see ``attn_course.widgets``).
"""

from . import linear, rotary
from .decoder import plot_half_losses, plot_head_patterns, plot_head_scores, plot_next_token, plot_time_per_token
from .efficient import plot_io_cost, plot_peak_memory, plot_tiles
from .gallery import plot_masking_demo, plot_pattern_gallery
from .heatmaps import show_heatmaps
from .interpolation import plot_lagrange_basis, plot_noisy_fit, plot_weight_comparison
from .linear import *  # noqa: F403  (the names in linear.__all__)
from .models import plot_head_weights, plot_rotation, plot_transformer_attention
from .pooling import plot_kernels, plot_nw_fit, plot_query_weights, plot_regression
from .rotary import *  # noqa: F403  (the names in rotary.__all__)
from .scoring import plot_saturation
from .selfattention import plot_self_attention_steps, plot_worked_example, show_matrix
from .training import plot_accuracy_by_length, plot_alignments, plot_decoding_step, plot_history

__all__ = [
    "plot_accuracy_by_length",
    "plot_alignments",
    "plot_decoding_step",
    "plot_half_losses",
    "plot_head_patterns",
    "plot_head_scores",
    "plot_head_weights",
    "plot_history",
    "plot_io_cost",
    "plot_kernels",
    "plot_lagrange_basis",
    "plot_masking_demo",
    "plot_next_token",
    "plot_noisy_fit",
    "plot_nw_fit",
    "plot_pattern_gallery",
    "plot_peak_memory",
    "plot_query_weights",
    "plot_regression",
    "plot_rotation",
    "plot_saturation",
    "plot_self_attention_steps",
    "plot_tiles",
    "plot_time_per_token",
    "plot_transformer_attention",
    "plot_weight_comparison",
    "plot_worked_example",
    "show_heatmaps",
    "show_matrix",
    *rotary.__all__,
    *linear.__all__,
]
