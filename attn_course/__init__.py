"""attn_course: the helper package of the hands-on attention course.

Every notebook imports it; each module covers one idea, in course order:

* ``kernels``   Nadaraya-Watson attention pooling, kernels, the Lagrange basis (notebooks 01-02)
* ``interpolation``  Lagrange interpolation against Nadaraya-Watson (notebook 02)
* ``masking``   valid lengths, boolean masks, the masked softmax (notebooks 03, 05)
* ``scoring``   scaled dot-product and additive scores, attention pooling over batches (notebook 03)
* ``scaling``   why scores are divided by sqrt(D): variance and softmax saturation (notebook 03)
* ``cost``      time and memory of attention as the sizes grow (notebook 03, benchmarks)
* ``selfattention``  the worked 3-token self-attention example, step by step (notebook 04)
* ``gallery``   heatmap patterns and a masking demo (notebook 05)
* ``layers``    ``nn.Module`` wrappers that keep their last ``attention_weights``
* ``multihead`` multi-head attention and the reshape trick (notebook 06)
* ``positional`` sinusoidal positional encoding and its rotations (notebook 06)
* ``rotary``    positions inside attention: rotary embeddings (RoPE) and the ALiBi bias (notebook 11)
* ``plots``     the figures, one module per topic (``plots.pooling`` for notebook 01, ...)
* ``widgets``   slider panels around the plotting functions, and their static frames for the site
* ``tasks``     a sequence-to-sequence task made in code: reversing digits (notebooks 07-08)
* ``seq2seq``   RNN encoder-decoders with and without Bahdanau attention (notebook 07)
* ``transformer``  a tiny encoder-decoder Transformer from the course's pieces (notebook 08)
* ``training``  training and greedy-decoding accuracy (notebooks 07-08)
* ``decoder``   a decoder-only language model: causal self-attention in pre-norm blocks (notebook 09)
* ``kvcache``   the KV cache: keys and values kept per layer while generating (notebook 09)
* ``mla``       multi-head latent attention: one cached latent per position, shared by the heads (notebook 09)
* ``generation``  temperature, top-k and generating with or without the cache (notebook 09)
* ``lmtask``    sequences that repeat their first half, training, previous-token and induction scores (notebook 09)
* ``data``      the course's data, made in code
* ``checks``    instant feedback for the exercises
* ``efficient``  the online softmax and a tiled (FlashAttention) forward pass, causal and local (notebook 10)
* ``efficient_cost``  peak memory measured with the profiler, bytes moved in an IO model (notebook 10)
* ``linear``    linear attention: feature maps, recurrent and chunked forms, decay, the delta rule (notebook 12)

Axis names, used in every docstring and shape comment:

    B  batch size              Q  number of queries      K  number of keys (= values)
    D  query and key size      V  value size             H  number of heads
    Dq, Dk, Dv  query, key and value sizes where they differ (additive and multi-head attention)
    dh  the size of one head, D / H (written d_h in the notebooks)
    T  sequence length where queries and keys are the same positions (self-attention, Q = K = T)
    U  hidden units of an MLP (additive attention, the Transformer's feed-forward network, the RNNs)
    X  evaluation points       N  interpolation nodes
    S, T  source and target lengths, E embedding size, L layers, C vocabulary size (notebooks 07-08)

Masks are boolean, ``True`` where a query may attend. Every function keeps the floating
dtype it is given and never modifies its inputs in place.
"""

from . import checks, data, linear, plots, rotary, tasks
from .cost import attention_cost, loglog_slope
from .decoder import DecoderOnlyLM
from .efficient import block_counts, flash_attention, online_softmax
from .efficient_cost import io_cost, peak_memory
from .gallery import pattern_scores
from .generation import generate, next_token_probs, time_per_token
from .interpolation import curve_mean_var
from .kernels import KERNELS, boxcar, constant, epanechnikov, gaussian, lagrange_basis, nadaraya_watson
from .kvcache import KVCache, kv_cache_bytes
from .layers import AdditiveAttention, DotProductAttention, NWKernelRegression
from .linear import *  # noqa: F403  (the names in linear.__all__)
from .lmtask import copying_scores, half_losses, head_scores, repeat_task, train_lm
from .masking import causal_mask, masked_softmax, sequence_mask
from .mla import MultiHeadLatentAttention
from .multihead import MultiHeadAttention, merge_heads, multi_head_attention, repeat_kv_heads, split_heads
from .plots import (
    plot_accuracy_by_length,
    plot_alignments,
    plot_decoding_step,
    plot_half_losses,
    plot_head_patterns,
    plot_head_scores,
    plot_head_weights,
    plot_history,
    plot_io_cost,
    plot_kernels,
    plot_lagrange_basis,
    plot_masking_demo,
    plot_next_token,
    plot_noisy_fit,
    plot_nw_fit,
    plot_pattern_gallery,
    plot_peak_memory,
    plot_query_weights,
    plot_regression,
    plot_rotation,
    plot_saturation,
    plot_self_attention_steps,
    plot_tiles,
    plot_time_per_token,
    plot_transformer_attention,
    plot_weight_comparison,
    plot_worked_example,
    show_heatmaps,
    show_matrix,
)
from .plots.decoder import plot_cache_bytes
from .plots.linear import *  # noqa: F403  (the names in plots.linear.__all__)
from .plots.rotary import *  # noqa: F403  (the names in plots.rotary.__all__)
from .positional import frequencies, positional_encoding, rotation_matrix
from .rotary import *  # noqa: F403  (the names in rotary.__all__)
from .scaling import dot_product_variance, mean_entropy
from .scoring import additive_scores, attention_pooling, dot_product_scores, scaled_dot_product_attention
from .selfattention import SelfAttentionSteps, self_attention_steps
from .seq2seq import AttentionDecoder, RNNDecoder, RNNSeq2Seq, Seq2SeqEncoder
from .training import History, accuracy_by_length, sequence_accuracy, train_seq2seq
from .transformer import (
    AddNorm,
    DecoderBlock,
    EncoderBlock,
    PositionWiseFFN,
    TransformerSeq2Seq,
)
from .widgets import slider_panel

__version__ = "0.1.0"

__all__ = [
    "KERNELS",
    "SelfAttentionSteps",
    "AdditiveAttention",
    "DotProductAttention",
    "MultiHeadAttention",
    "MultiHeadLatentAttention",
    "copying_scores",
    "plot_cache_bytes",
    "NWKernelRegression",
    "additive_scores",
    "attention_cost",
    "attention_pooling",
    "boxcar",
    "causal_mask",
    "checks",
    "constant",
    "curve_mean_var",
    "data",
    "dot_product_scores",
    "dot_product_variance",
    "epanechnikov",
    "frequencies",
    "gaussian",
    "lagrange_basis",
    "loglog_slope",
    "masked_softmax",
    "mean_entropy",
    "merge_heads",
    "multi_head_attention",
    "nadaraya_watson",
    "pattern_scores",
    "plot_kernels",
    "plot_head_weights",
    "plot_lagrange_basis",
    "plot_masking_demo",
    "plot_noisy_fit",
    "plot_pattern_gallery",
    "plot_nw_fit",
    "plot_query_weights",
    "plot_regression",
    "plot_rotation",
    "plot_saturation",
    "plot_self_attention_steps",
    "plot_weight_comparison",
    "plot_worked_example",
    "positional_encoding",
    "rotation_matrix",
    "scaled_dot_product_attention",
    "self_attention_steps",
    "sequence_mask",
    "show_heatmaps",
    "show_matrix",
    "slider_panel",
    "split_heads",
    "AttentionDecoder",
    "RNNDecoder",
    "RNNSeq2Seq",
    "Seq2SeqEncoder",
    "History",
    "accuracy_by_length",
    "plot_accuracy_by_length",
    "plot_alignments",
    "plot_decoding_step",
    "plot_history",
    "sequence_accuracy",
    "train_seq2seq",
    "AddNorm",
    "DecoderBlock",
    "EncoderBlock",
    "PositionWiseFFN",
    "TransformerSeq2Seq",
    "tasks",
    "plot_transformer_attention",
    "block_counts",
    "flash_attention",
    "io_cost",
    "online_softmax",
    "peak_memory",
    "plot_io_cost",
    "plot_peak_memory",
    "plot_tiles",
    "DecoderOnlyLM",
    "KVCache",
    "generate",
    "half_losses",
    "head_scores",
    "kv_cache_bytes",
    "next_token_probs",
    "repeat_kv_heads",
    "repeat_task",
    "train_lm",
    "time_per_token",
    "plot_half_losses",
    "plot_head_patterns",
    "plot_head_scores",
    "plot_next_token",
    "plot_time_per_token",
    *rotary.__all__,
    *linear.__all__,
    *plots.rotary.__all__,
    *plots.linear.__all__,
]
