"""Input checks of the repeated-facts model and the lightning indexer's training (``indexer``, notebook 13)
(private); see ``_validate``, whose checks these are built from.
"""

from __future__ import annotations

from . import require_bool, require_instance, require_int, require_positive
from .lm import require_generator
from .mqar import require_recall_inputs

# A private module: every helper imports the checks it needs by name, so it has no __all__.


def require_facts_args(batch_size, generator, runs) -> None:
    """facts_batch's arguments: a whole number of sequences >= 1, None or a generator, and a bool."""
    require_int(batch_size, "batch_size")
    require_generator(generator)
    require_bool(runs, "runs")


def require_facts_inputs(keys, values, num_keys: int, num_values: int, length: int) -> None:
    """A FactsModel's inputs: (B, T) key ids in [0, num_keys) and value ids in [0, num_values] (the blank included),
    of one shape, T at most the model's ``length``."""
    require_recall_inputs(keys, values, num_keys, num_values)  # the recall race's inputs are the same pairs
    if keys.shape[1] > length:
        raise ValueError(f"keys must have at most {length} positions, the model's length, got {keys.shape[1]}")


def require_train_args(steps, seed, lr, batch_size) -> None:
    """Training arguments: whole numbers of steps and sequences >= 1, a seed >= 0 and a learning rate > 0."""
    require_int(steps, "steps")
    require_int(seed, "seed", 0)
    require_positive(lr, "lr")
    require_int(batch_size, "batch_size")


def require_indexer_args(model, model_class, steps, seed, lr, batch_size) -> None:
    """train_indexer's arguments: a trained ``model_class`` and the training arguments."""
    require_instance(model, "model", model_class, "a FactsModel (from train_facts_model)")
    require_train_args(steps, seed, lr, batch_size)
