"""Instant feedback for the exercises.

Each ``check_*`` function takes a learner's answer and returns a ``Feedback``: it shows as
one line in the notebook ("Correct: ..." or "Not yet: <a hint at what is off>") and is truthy
exactly when the answer is right, so it can be tested like any other function.
One module per notebook: ``nb01``, ``nb02``, ...
"""

from ._feedback import Feedback
from .nb01 import check_epanechnikov, check_leave_one_out_mask, check_nw_weights, check_pooling_limit
from .nb02 import check_convex_bound, check_lagrange_weight, check_nearest_neighbour_limit
from .nb03 import check_bmm_shape, check_distance_scores, check_dot_variance, check_scaled_scores
from .nb04 import check_new_token_key, check_new_token_output, check_new_token_scores
from .nb05 import check_causal_mask, check_padding_causal_mask, check_padding_mask
from .nb06 import check_parameter_count, check_rotation, check_split_shape
from .nb07 import check_alignment_position, check_context, check_memory_size
from .nb08 import check_causal_row, check_ffn_parameters, check_layer_norm
from .nb09 import check_cache_memory, check_cache_update, check_repeat_kv
from .nb11 import check_alibi_row, check_apply_rope, check_rope_angle

__all__ = [
    "Feedback",
    "check_nw_weights",
    "check_pooling_limit",
    "check_epanechnikov",
    "check_leave_one_out_mask",
    "check_lagrange_weight",
    "check_nearest_neighbour_limit",
    "check_convex_bound",
    "check_scaled_scores",
    "check_dot_variance",
    "check_distance_scores",
    "check_bmm_shape",
    "check_new_token_key",
    "check_new_token_scores",
    "check_new_token_output",
    "check_padding_mask",
    "check_causal_mask",
    "check_padding_causal_mask",
    "check_split_shape",
    "check_parameter_count",
    "check_rotation",
    "check_alignment_position",
    "check_context",
    "check_memory_size",
    "check_layer_norm",
    "check_ffn_parameters",
    "check_causal_row",
    "check_rope_angle",
    "check_alibi_row",
    "check_apply_rope",
    "check_repeat_kv",
    "check_cache_update",
    "check_cache_memory",
]
