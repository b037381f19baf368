"""Instant feedback for the exercises.

Each ``check_*`` function takes a learner's answer and returns a ``Feedback``: it shows as
one line in the notebook ("Correct: ..." or "Not yet: <a hint at what is off>") and is truthy
exactly when the answer is right, so it can be tested like any other function.
One module per notebook: ``nb01``, ``nb02``, ...
"""

from ._feedback import Feedback
from .nb01 import check_epanechnikov, check_nw_pooling, check_nw_weights, check_pooling_limit
from .nb02 import check_chebyshev_nodes, check_convex_bound, check_lagrange_weight, check_nearest_neighbour_limit
from .nb03 import (
    check_additive_scores_fn,
    check_attention_memory,
    check_dot_scores_fn,
    check_parameter_growth,
    check_scaled_scores,
    check_variance_scale,
)
from .nb04 import (
    check_new_token_key,
    check_new_token_output,
    check_new_token_scores,
    check_reversed_outputs,
    check_self_attending_key,
)
from .nb05 import (
    check_causal_mask,
    check_key_padding_mask,
    check_masked_attention,
    check_padding_causal_mask,
    check_padding_mask,
)
from .nb06 import (
    check_multi_head,
    check_parameter_count,
    check_positional_encoding,
    check_rotation,
    check_split_merge,
    check_split_shape,
)
from .nb07 import check_alignment_position, check_bahdanau_step, check_context, check_memory_size
from .nb08 import check_causal_row, check_ffn_parameters, check_layer_norm
from .nb09 import check_cache_memory, check_cache_update, check_repeat_kv
from .nb10 import check_causal_tiles, check_online_step, check_tiled_bytes
from .nb11 import check_alibi_row, check_apply_rope, check_rope_angle

__all__ = [
    "Feedback",
    "check_nw_weights",
    "check_pooling_limit",
    "check_epanechnikov",
    "check_nw_pooling",
    "check_lagrange_weight",
    "check_nearest_neighbour_limit",
    "check_convex_bound",
    "check_chebyshev_nodes",
    "check_scaled_scores",
    "check_attention_memory",
    "check_dot_scores_fn",
    "check_additive_scores_fn",
    "check_parameter_growth",
    "check_variance_scale",
    "check_new_token_key",
    "check_new_token_scores",
    "check_new_token_output",
    "check_reversed_outputs",
    "check_self_attending_key",
    "check_padding_mask",
    "check_causal_mask",
    "check_padding_causal_mask",
    "check_key_padding_mask",
    "check_masked_attention",
    "check_split_shape",
    "check_parameter_count",
    "check_rotation",
    "check_split_merge",
    "check_multi_head",
    "check_positional_encoding",
    "check_alignment_position",
    "check_context",
    "check_memory_size",
    "check_bahdanau_step",
    "check_layer_norm",
    "check_ffn_parameters",
    "check_causal_row",
    "check_online_step",
    "check_causal_tiles",
    "check_tiled_bytes",
    "check_rope_angle",
    "check_alibi_row",
    "check_apply_rope",
    "check_repeat_kv",
    "check_cache_update",
    "check_cache_memory",
]
