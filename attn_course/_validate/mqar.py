"""Input checks of the recall race (``mqar``, notebook 12) (private); see ``_validate``, whose checks these are built
from.
"""

from __future__ import annotations

from . import require_choice, require_int, require_nonempty_list, require_positive, require_tokens
from .lm import require_generator

# A private module: every helper imports the checks it needs by name, so it has no __all__.

MEMORIES = ("softmax", "linear", "sum", "delta", "gated")  # mqar.MEMORIES, the kinds of memory layer


def require_mqar_batch_args(num_pairs, batch_size, num_keys, num_values, generator) -> None:
    """mqar_batch's arguments: whole numbers >= 1, at most ``num_keys`` pairs (the keys of a sequence are distinct),
    and None or a generator."""
    require_int(num_keys, "num_keys")
    require_int(num_values, "num_values")
    require_int(num_pairs, "num_pairs", 1, num_keys)
    require_int(batch_size, "batch_size")
    require_generator(generator)


def require_recall_model_args(memories, num_keys, num_values, width, head_size) -> None:
    """RecallModel's arguments: a non-empty list of memory kinds and sizes >= 1."""
    require_nonempty_list(memories, "memories", f"memory kinds from {list(MEMORIES)}")
    for kind in memories:
        require_choice(kind, "memories", MEMORIES)
    for value, name in ((num_keys, "num_keys"), (num_values, "num_values"), (width, "width")):
        require_int(value, name)
    require_int(head_size, "head_size")


def require_race_args(memories, pairs, steps, batch_size, num_keys, num_values, lr, seed) -> None:
    """train_recall's arguments: the model's, a non-empty list of numbers of pairs in [1, num_keys], whole numbers
    of steps and sequences >= 1, a learning rate > 0 and a seed >= 0."""
    require_recall_model_args(memories, num_keys, num_values, 1, 1)
    require_nonempty_list(pairs, "pairs", "numbers of pairs")
    for n in pairs:
        require_int(n, "pairs", 1, num_keys)
    require_int(steps, "steps")
    require_int(batch_size, "batch_size")
    require_positive(lr, "lr")
    require_int(seed, "seed", 0)


def require_recall_inputs(keys, values, num_keys: int, num_values: int) -> None:
    """RecallModel's inputs: (B, T) key ids in [0, num_keys) and value ids in [0, num_values], the blank included,
    of one shape."""
    require_tokens(keys, "keys", num_keys)
    require_tokens(values, "values", num_values + 1)
    if values.shape != keys.shape:
        raise ValueError(
            f"values must have the shape of keys (B, T) = {tuple(keys.shape)}, one value per position, "
            f"got {tuple(values.shape)}"
        )
