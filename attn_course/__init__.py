"""attn_course: the helper package of the hands-on attention course.

Every notebook imports it; each module covers one idea, in course order:

* ``kernels``   Nadaraya-Watson attention pooling, kernels, the Lagrange basis (notebooks 01-02)
* ``masking``   valid lengths, boolean masks, the masked softmax (notebooks 03, 05)
* ``scoring``   scaled dot-product and additive scores, attention pooling over batches (notebook 03)
* ``layers``    ``nn.Module`` wrappers that keep their last ``attention_weights``
* ``plotting``  heatmaps and the figures of the notebooks
* ``widgets``   slider panels around the plotting functions
* ``data``      the course's data, made in code
* ``checks``    instant feedback for the exercises

Axis names, used in every docstring and shape comment:

    B  batch size              Q  number of queries      K  number of keys (= values)
    D  query and key size      V  value size             H  hidden units (or heads)

Masks are boolean, ``True`` where a query may attend. Every function keeps the floating
dtype it is given and never modifies its inputs in place.
"""

from . import checks, data
from .kernels import KERNELS, boxcar, constant, epanechnikov, gaussian, lagrange_basis, nadaraya_watson
from .layers import AdditiveAttention, DotProductAttention, NWKernelRegression
from .masking import masked_softmax, sequence_mask
from .plotting import plot_kernels, plot_nw_fit, plot_query_weights, plot_regression, show_heatmaps
from .scoring import additive_scores, attention_pooling, dot_product_scores, scaled_dot_product_attention
from .widgets import slider_panel

__version__ = "0.1.0"

__all__ = [
    "KERNELS",
    "AdditiveAttention",
    "DotProductAttention",
    "NWKernelRegression",
    "additive_scores",
    "attention_pooling",
    "boxcar",
    "checks",
    "constant",
    "data",
    "dot_product_scores",
    "epanechnikov",
    "gaussian",
    "lagrange_basis",
    "masked_softmax",
    "nadaraya_watson",
    "plot_kernels",
    "plot_nw_fit",
    "plot_query_weights",
    "plot_regression",
    "scaled_dot_product_attention",
    "sequence_mask",
    "show_heatmaps",
    "slider_panel",
]
