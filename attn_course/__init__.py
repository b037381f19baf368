"""attn_course: the helper package of the hands-on attention course.

Every notebook imports it; each module covers one idea, in course order:

* ``pooling``   Nadaraya-Watson attention pooling and its kernels (notebook 01)
* ``interpolation``  the Lagrange basis, Lagrange interpolation against Nadaraya-Watson (notebook 02)
* ``masking``   valid lengths, boolean masks, the masked softmax, heatmap patterns (notebooks 03, 05)
* ``scoring``   scaled dot-product and additive scores, attention pooling over batches (notebook 03)
* ``scaling``   why scores are divided by sqrt(D): variance and softmax saturation (notebook 03)
* ``cost``      time and memory of attention: timed and measured, and bytes moved in an IO model (notebooks 03, 10)
* ``selfattention``  the worked 3-token self-attention example, step by step (notebook 04)
* ``layers``    ``nn.Module`` wrappers that keep their last ``attention_weights``
* ``multihead`` multi-head attention and the reshape trick (notebook 06)
* ``positional`` sinusoidal positional encoding and its rotations (notebook 06)
* ``rotary``    positions inside attention: rotary embeddings (RoPE) and the ALiBi bias (notebook 11)
* ``extrapolation``  context extension: RoPE's frequencies scaled by PI, NTK-aware scaling and YaRN (notebook 11)
* ``plots``     the figures, one module per topic (``plots.pooling`` for notebook 01, ...)
* ``widgets``   slider panels around the plotting functions, and their static frames for the site
* ``tasks``     a sequence-to-sequence task made in code: reversing digits (notebooks 07-08)
* ``seq2seq``   RNN encoder-decoders with and without Bahdanau attention (notebook 07)
* ``transformer``  a tiny encoder-decoder Transformer from the course's pieces (notebook 08)
* ``training``  training and greedy-decoding accuracy (notebooks 07-08)
* ``causal``    causal self-attention with RoPE and a KV cache: the interface of every decoder attention (notebook 09)
* ``mla``       multi-head latent attention: one cached latent per position, shared by the heads (notebook 09)
* ``kvcache``   the KV cache: what each layer's attention keeps per position while generating (notebook 09)
* ``decoder``   a decoder-only language model: causal self-attention in pre-norm blocks (notebook 09)
* ``generation``  temperature, top-k and generating with or without the cache (notebook 09)
* ``lmdata``    language-modelling data: sequences that repeat their first half, a Markov source (notebooks 09, 11)
* ``lmtrain``   training a language model: AdamW, warm-up and cosine decay (notebooks 09, 11)
* ``lmeval``    losses per half and per position, previous-token, induction and copying scores (notebooks 09, 11)
* ``data``      the course's data, made in code
* ``checks``    instant feedback for the exercises
* ``efficient``  the online softmax and a tiled (FlashAttention) forward pass, causal and local (notebook 10)
* ``linear``    linear attention: feature maps, recurrent and chunked forms, decay (notebook 12)
* ``delta_rule``  the delta rule, Gated DeltaNet and the chunked (UT transform) form (notebook 12)
* ``mqar``      the recall race: multi-query associative recall learned by each kind of memory (notebook 12)
* ``sparse``    sparse attention: top-k, MoBA's blocks, NSA's branches, the lightning indexer's score (notebook 13)
* ``indexer``   a trained layer for sparse attention to work on, and the lightning indexer trained by KL (notebook 13)

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

import sys

from . import checks, data, tasks  # namespaces, used as ac.checks.check_..., ac.data.toy_regression, ac.tasks.encode

# The topic modules in course order, not sorted by name (``causal``, the decoder's attention layer, is used through
# ``DecoderOnlyLM``).
# isort: off
from .pooling import *  # noqa: F403
from .interpolation import *  # noqa: F403
from .masking import *  # noqa: F403
from .scoring import *  # noqa: F403
from .scaling import *  # noqa: F403
from .cost import *  # noqa: F403
from .selfattention import *  # noqa: F403
from .layers import *  # noqa: F403
from .multihead import *  # noqa: F403
from .positional import *  # noqa: F403
from .seq2seq import *  # noqa: F403
from .training import *  # noqa: F403
from .transformer import *  # noqa: F403
from .mla import *  # noqa: F403
from .kvcache import *  # noqa: F403
from .decoder import *  # noqa: F403
from .generation import *  # noqa: F403
from .lmdata import *  # noqa: F403
from .lmtrain import *  # noqa: F403
from .lmeval import *  # noqa: F403
from .efficient import *  # noqa: F403
from .rotary import *  # noqa: F403
from .extrapolation import *  # noqa: F403
from .linear import *  # noqa: F403
from .delta_rule import *  # noqa: F403
from .mqar import *  # noqa: F403
from .sparse import *  # noqa: F403
from .indexer import *  # noqa: F403
from .plots import *  # noqa: F403
from .widgets import *  # noqa: F403
# isort: on

__version__ = "0.1.0"

# The names of the topic modules above, each module's ``__all__`` in course order. A module is read from sys.modules:
# the function ``delta_rule`` hides the module of that name.
_MODULES = (
    "pooling",
    "interpolation",
    "masking",
    "scoring",
    "scaling",
    "cost",
    "selfattention",
    "layers",
    "multihead",
    "positional",
    "seq2seq",
    "training",
    "transformer",
    "mla",
    "kvcache",
    "decoder",
    "generation",
    "lmdata",
    "lmtrain",
    "lmeval",
    "efficient",
    "rotary",
    "extrapolation",
    "linear",
    "delta_rule",
    "mqar",
    "sparse",
    "indexer",
    "plots",
    "widgets",
)
__all__ = [
    "checks",
    "data",
    "tasks",
    *(name for module in _MODULES for name in sys.modules[f"{__name__}.{module}"].__all__),
]
