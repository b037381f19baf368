"""attn_course.training: train_seq2seq, the accuracies, and the figures of notebooks 07-08."""

import copy
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.collections import QuadMesh
from matplotlib.figure import Figure
from torch import nn
from torch.testing import assert_close

from attn_course import (
    History,
    RNNSeq2Seq,
    TransformerSeq2Seq,
    accuracy_by_length,
    plot_accuracy_by_length,
    plot_alignments,
    plot_decoding_step,
    plot_history,
    sequence_accuracy,
    show_heatmaps,
    train_seq2seq,
)
from attn_course.plots.seq2seq import _alignment_panels as alignment_panels
from attn_course.tasks import BOS, EOS, PAD, make_batch, reversal_task, to_text


def predict(model, batch) -> list[str]:
    """Greedy predictions as digit strings, with room for one token more than the longest target: what
    sequence_accuracy compares with the targets, written out here to check it."""
    model.eval()
    tokens, _ = model.greedy(batch.src, batch.src_len, max_len=batch.tgt_out.shape[1] + 1)
    return [to_text(row) for row in tokens]


MODELS = {
    "rnn": lambda: RNNSeq2Seq(attention=False, embed_size=8, num_hiddens=16),
    "bahdanau": lambda: RNNSeq2Seq(attention=True, embed_size=8, num_hiddens=16),
    "transformer": lambda: TransformerSeq2Seq(num_hiddens=16, num_heads=2, num_layers=1, ffn_hiddens=32, max_len=8),
}


@pytest.fixture(scope="module")
def data():
    return reversal_task(num_train=64, num_valid=16, num_test=16, max_len=4)


def _make(name, seed=0):
    torch.manual_seed(seed)  # the same initial parameters for every call with the same seed
    return MODELS[name]()


def _loss(model, batch, ignore_index=PAD):
    with torch.no_grad():
        logits = model(batch.src, batch.src_len, batch.tgt_in)
    return float(nn.functional.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=ignore_index))


# ----------------------------------------------------------------------------------------------
# train_seq2seq
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_a_few_epochs_reduce_the_loss(name, data):
    model = _make(name)
    before = _loss(model, data.train)
    history = train_seq2seq(model, data, epochs=3, batch_size=16, lr=1e-2)
    assert isinstance(history, History)
    assert len(history.train_loss) == len(history.valid_accuracy) == 3
    assert history.train_loss[-1] < history.train_loss[0]
    assert _loss(model, data.train) < 0.95 * before
    assert all(0.0 <= a <= 1.0 for a in history.valid_accuracy)
    assert history.seconds > 0
    assert not model.training  # left in eval mode
    assert history.valid_accuracy[-1] == sequence_accuracy(model, data.valid)


@pytest.mark.parametrize("name", ["rnn", "transformer"])
def test_training_is_deterministic_for_a_seed(name, data):
    first, again, other = _make(name), _make(name), _make(name)
    h1 = train_seq2seq(first, data, epochs=2, batch_size=16, seed=7)
    h2 = train_seq2seq(again, data, epochs=2, batch_size=16, seed=7)
    h3 = train_seq2seq(other, data, epochs=2, batch_size=16, seed=8)
    assert h1.train_loss == h2.train_loss and h1.valid_accuracy == h2.valid_accuracy
    assert all(torch.equal(p, q) for p, q in zip(first.parameters(), again.parameters(), strict=True))
    assert h3.train_loss != h1.train_loss  # another order of the examples
    assert not all(torch.equal(p, q) for p, q in zip(first.parameters(), other.parameters(), strict=True))


@pytest.mark.parametrize("name", ["bahdanau", "transformer"])
def test_batched_foreach_updates_train_exactly_like_tensor_by_tensor_ones(monkeypatch, name, data):
    """Adam and the clipping run with foreach=True: the same parameters, bit for bit, as one tensor at a time."""
    batched = _make(name)
    train_seq2seq(batched, data, epochs=2, batch_size=16, lr=1e-2, clip=0.05)
    adam, clip = torch.optim.Adam, nn.utils.clip_grad_norm_
    monkeypatch.setattr(torch.optim, "Adam", lambda params, **kw: adam(params, **(kw | {"foreach": False})))
    monkeypatch.setattr(nn.utils, "clip_grad_norm_", lambda params, c, **kw: clip(params, c, foreach=False))
    one_by_one = _make(name)
    train_seq2seq(one_by_one, data, epochs=2, batch_size=16, lr=1e-2, clip=0.05)
    assert all(torch.equal(p, q) for p, q in zip(batched.parameters(), one_by_one.parameters(), strict=True))
    assert not all(torch.equal(p, q) for p, q in zip(batched.parameters(), _make(name).parameters(), strict=True))


def test_training_leaves_the_global_rng_alone(data):
    model = _make("rnn")
    state = torch.get_rng_state()
    train_seq2seq(model, data, epochs=1, batch_size=32)
    assert torch.equal(torch.get_rng_state(), state)


def test_one_batch_first_loss_is_the_untrained_cross_entropy_with_pad_ignored(data):
    """With one batch per epoch the first loss is measured before any update: CE over the non-PAD targets."""
    model = _make("bahdanau")
    untrained = copy.deepcopy(model)
    history = train_seq2seq(model, data, epochs=1, batch_size=len(data.train))
    expected = _loss(untrained, data.train)
    assert history.train_loss[0] == pytest.approx(expected, rel=1e-5)
    assert (data.train.tgt_out == PAD).any()  # the data has padding, so ignoring it matters:
    assert expected != pytest.approx(_loss(untrained, data.train, ignore_index=-100), rel=1e-3)


class _RecordingAdam(torch.optim.Adam):
    """Adam that records, at every step, its learning rate and the norm of all the gradients."""

    lrs: list[float] = []
    norms: list[float] = []

    def step(self, closure=None):
        grads = [p.grad for group in self.param_groups for p in group["params"] if p.grad is not None]
        type(self).lrs.append(self.param_groups[0]["lr"])
        type(self).norms.append(float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))))
        return super().step(closure)


def _recorded_run(monkeypatch, data, **kwargs):
    class Recorder(_RecordingAdam):
        lrs, norms = [], []

    monkeypatch.setattr(torch.optim, "Adam", Recorder)
    train_seq2seq(_make("rnn"), data, **kwargs)
    return Recorder.lrs, Recorder.norms


def test_learning_rate_decays_along_a_half_cosine(monkeypatch, data):
    """2 epochs of 64 / 32 = 2 batches: 4 steps, lr_k = lr (1 + cos(pi k / 4)) / 2."""
    lrs, _ = _recorded_run(monkeypatch, data, epochs=2, batch_size=32, lr=0.01)
    expected = [0.01 * (1 + math.cos(math.pi * k / 4)) / 2 for k in range(4)]  # 0.01, 0.00854, 0.005, 0.00146
    assert lrs == pytest.approx(expected, rel=1e-9)


def test_gradients_are_clipped_to_norm_clip(monkeypatch, data):
    _, unclipped = _recorded_run(monkeypatch, data, epochs=1, batch_size=16, clip=1e6)
    assert max(unclipped) > 0.05  # so clipping at 0.05 has something to do
    _, clipped = _recorded_run(monkeypatch, data, epochs=1, batch_size=16, clip=0.05)
    assert len(clipped) == 4 and max(clipped) <= 0.05 * (1 + 1e-4)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"model": nn.Linear(2, 2)}, TypeError, r"model must be an nn\.Module with a greedy\(\) method, got Linear"),
        ({"model": None}, TypeError, r"model must be an nn\.Module with a greedy\(\) method, got NoneType"),
        (
            {"data": "train"},
            TypeError,
            r"data must be the Splits of a task \(e\.g\. tasks\.reversal_task\(\)\), got str",
        ),
        ({"epochs": 0}, ValueError, r"epochs must be an integer >= 1, got 0"),
        ({"epochs": 2.0}, TypeError, r"epochs must be an integer >= 1, got 2\.0"),
        ({"batch_size": 0}, ValueError, r"batch_size must be an integer >= 1, got 0"),
        ({"lr": 0}, ValueError, r"lr must be a finite number > 0, got 0\.0"),
        ({"lr": -0.1}, ValueError, r"lr must be a finite number > 0, got -0\.1"),
        ({"lr": float("nan")}, ValueError, r"lr must be a finite number > 0, got nan"),
        ({"lr": "0.1"}, TypeError, r"lr must be a finite number > 0, got '0\.1' \(str\)"),
        ({"clip": 0.0}, ValueError, r"clip must be a finite number > 0, got 0\.0"),
        ({"clip": float("inf")}, ValueError, r"clip must be a finite number > 0, got inf"),
        ({"seed": -1}, ValueError, r"seed must be an integer >= 0, got -1"),
    ],
    ids=[
        "linear",
        "none",
        "data-str",
        "zero-epochs",
        "float-epochs",
        "zero-batch",
        "zero-lr",
        "negative-lr",
        "nan-lr",
        "str-lr",
        "zero-clip",
        "inf-clip",
        "negative-seed",
    ],
)
def test_train_seq2seq_error_messages_before_any_update(kwargs, error, match, data):
    model = _make("rnn")
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(error, match=match):
        train_seq2seq(**{"model": model, "data": data, "epochs": 1, **kwargs})
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before, strict=True))


def test_train_seq2seq_wants_the_splits_not_a_batch(data):
    with pytest.raises(TypeError, match=r"data must be the Splits of a task.*got Batch"):
        train_seq2seq(_make("rnn"), data.train)
    with pytest.raises(TypeError, match=r"data must be the Splits of a task.*got tuple"):
        train_seq2seq(_make("rnn"), tuple(data))


# ----------------------------------------------------------------------------------------------
# predict, sequence_accuracy, accuracy_by_length, with fake models whose greedy output is known
# ----------------------------------------------------------------------------------------------

SOURCES = ["12", "345", "6", "7890", "98"]  # reversed: "21", "543", "6", "0987", "89"


class _FixedOutput(nn.Module):
    """A 'model' whose greedy decoding returns the given tokens, cut or padded with PAD to max_len."""

    def __init__(self, tokens):
        super().__init__()
        self.tokens, self.max_lens = tokens, []

    def greedy(self, src, src_len, max_len):
        self.max_lens.append(max_len)
        out = torch.full((src.shape[0], max_len), PAD)
        width = min(max_len, self.tokens.shape[1])
        out[:, :width] = self.tokens[:, :width]
        return out, None


def _shift_digits(tokens):
    """Every digit d replaced by d + 1 (mod 10); specials kept."""
    digits = tokens >= 3
    return torch.where(digits, (tokens - 3 + 1) % 10 + 3, tokens)


def test_sequence_accuracy_decodes_with_room_for_one_more_token():
    batch = make_batch(SOURCES)
    model = _FixedOutput(batch.tgt_out)
    assert predict(model, batch) == ["21", "543", "6", "0987", "89"]
    model.max_lens.clear()
    assert sequence_accuracy(model, batch) == 1.0
    assert model.max_lens == [batch.tgt_out.shape[1] + 1]  # T = 5: max_len 6


def test_sequence_accuracy_one_for_the_targets_zero_for_wrong_digits():
    batch = make_batch(SOURCES)
    assert sequence_accuracy(_FixedOutput(batch.tgt_out), batch) == 1.0
    assert sequence_accuracy(_FixedOutput(_shift_digits(batch.tgt_out)), batch) == 0.0
    mixed = batch.tgt_out.clone()
    mixed[1:4] = _shift_digits(mixed[1:4])
    assert sequence_accuracy(_FixedOutput(mixed), batch) == pytest.approx(2 / 5)


@pytest.mark.parametrize(
    "output",
    [[5, 4, 6, EOS], [5, EOS, PAD, PAD], [4, 5, EOS, PAD], [EOS, PAD, PAD, PAD]],
    ids=["one-digit-too-many", "stops-early", "not-reversed", "empty"],
)
def test_sequence_accuracy_counts_a_wrong_output_as_wrong(output):
    batch = make_batch(["12"])  # target: ids 5 4 <eos> ("21")
    assert sequence_accuracy(_FixedOutput(torch.tensor([output])), batch) == 0.0


@pytest.mark.parametrize(
    "output",
    [[5, 4, PAD, PAD], [5, PAD, 4, EOS], [5, BOS, 4, EOS], [PAD, 5, 4, EOS]],
    ids=["no-eos", "pad-inside", "bos-inside", "pad-first"],
)
def test_sequence_accuracy_needs_exactly_the_target_tokens_and_the_eos(output):
    """Documented: the whole greedy output equals the target, every digit and the EOS.

    These outputs spell "21" once PAD and BOS are skipped, but they are not the target 5 4 <eos>.
    """
    batch = make_batch(["12"])
    assert sequence_accuracy(_FixedOutput(torch.tensor([output])), batch) == 0.0


def test_accuracy_by_length_groups_by_number_of_digits():
    batch = make_batch(SOURCES)
    outputs = batch.tgt_out.clone()
    outputs[4] = _shift_digits(outputs[4])  # "98" wrong, "12" right: length 2 gets 1/2
    result = accuracy_by_length(_FixedOutput(outputs), batch)
    assert result == {1: 1.0, 2: 0.5, 3: 1.0, 4: 1.0}
    assert list(result) == [1, 2, 3, 4]  # sorted by length
    assert accuracy_by_length(_FixedOutput(_shift_digits(batch.tgt_out)), batch) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}


@pytest.mark.parametrize("fn", [sequence_accuracy, accuracy_by_length])
@pytest.mark.parametrize(
    "model, shown", [(nn.Linear(2, 2), "Linear"), (lambda src, src_len, max_len: None, "function"), (None, "NoneType")]
)
def test_scoring_functions_reject_a_model_without_greedy(fn, model, shown):
    with pytest.raises(TypeError, match=rf"model must be an nn\.Module with a greedy\(\) method, got {shown}"):
        fn(model, make_batch(SOURCES))


def test_predict_and_accuracy_on_a_real_model(data):
    """A real model goes through the same path: strings of digits, an accuracy in [0, 1] that matches them."""
    model = _make("bahdanau")
    strings = predict(model, data.test)
    assert len(strings) == 16 and all(s == "" or s.isdigit() for s in strings)
    targets = [to_text(row) for row in data.test.tgt_out]
    assert sequence_accuracy(model, data.test) == sum(p == t for p, t in zip(strings, targets, strict=True)) / 16


# ----------------------------------------------------------------------------------------------
# plot_history and plot_accuracy_by_length
# ----------------------------------------------------------------------------------------------


def _lines(ax):
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()}


def test_plot_history_one_line_per_model_on_labelled_axes():
    histories = {
        "RNN": History(train_loss=[2.0, 1.5, 1.2], valid_accuracy=[0.0, 0.25, 0.5], seconds=1.0),
        "attention": History(train_loss=[1.8, 0.9, 0.4], valid_accuracy=[0.1, 0.6, 0.9], seconds=2.0),
    }
    fig = plot_history(histories)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    ax_loss, ax_acc = fig.axes
    assert _lines(ax_loss) == {"RNN": ([1, 2, 3], [2.0, 1.5, 1.2]), "attention": ([1, 2, 3], [1.8, 0.9, 0.4])}
    assert _lines(ax_acc) == {"RNN": ([1, 2, 3], [0.0, 0.25, 0.5]), "attention": ([1, 2, 3], [0.1, 0.6, 0.9])}
    assert ax_loss.get_yscale() == "log"
    for ax in fig.axes:
        assert ax.get_xlabel() == "epoch" and ax.get_ylabel() and ax.get_title()
    assert [t.get_text() for t in ax_acc.get_legend().get_texts()] == ["RNN", "attention"]


@pytest.mark.parametrize(
    "histories, error, match",
    [
        ({}, ValueError, r"histories must be a non-empty dict \{model name: History\}, got an empty dict"),
        ([History()], TypeError, r"histories must be a dict \{model name: History\}, got list"),
        (None, TypeError, r"histories must be a dict \{model name: History\}, got NoneType"),
        ({"RNN": 3}, TypeError, r"histories\['RNN'\] must be a History \(from train_seq2seq\), got int"),
    ],
    ids=["empty", "list", "none", "not-a-history"],
)
def test_plot_history_error_messages(histories, error, match):
    with pytest.raises(error, match=match):
        plot_history(histories)


def test_plot_accuracy_by_length_draws_on_given_axes():
    fig, ax = plt.subplots()
    results = {"RNN": {2: 1.0, 3: 0.5, 4: 0.0}, "Transformer": {2: 1.0, 3: 1.0, 4: 0.75}}
    got = plot_accuracy_by_length(results, ax=ax)
    assert got is fig and plt.get_fignums() == [fig.number]
    assert _lines(ax) == {"RNN": ([2, 3, 4], [1.0, 0.5, 0.0]), "Transformer": ([2, 3, 4], [1.0, 1.0, 0.75])}
    assert ax.get_xlabel() == "source length (digits)" and ax.get_ylabel() == "sequence accuracy"
    alone = plot_accuracy_by_length({"RNN": {5: 0.2}})
    assert isinstance(alone, Figure) and alone is not fig and _lines(alone.axes[0]) == {"RNN": ([5], [0.2])}


@pytest.mark.parametrize("results", [{}, [{2: 1.0}], None], ids=["empty", "list", "none"])
def test_plot_accuracy_by_length_error_messages(results):
    with pytest.raises(ValueError, match=r"results must be a non-empty dict \{model name: accuracy_by_length"):
        plot_accuracy_by_length(results)


# ----------------------------------------------------------------------------------------------
# alignment_panels and plot_alignments
# ----------------------------------------------------------------------------------------------


def _decoded():
    """Sources "12" and "3456" (S = 5), decoded tokens by hand, and weights[b, t, s] = 100 b + 10 t + s."""
    batch = make_batch(["12", "3456"])
    tokens = torch.tensor([[5, 4, EOS, PAD, PAD, PAD], [9, 8, 7, 6, 4, 3]])  # "21" <eos>; "6543" "10", no EOS
    weights = torch.tensor([[[100.0 * b + 10 * t + s for s in range(5)] for t in range(6)] for b in range(2)])
    return batch, tokens, weights


def test_alignment_panels_trim_to_src_len_and_first_eos():
    batch, tokens, weights = _decoded()
    panels = alignment_panels(weights, batch, tokens, [1, 0])
    assert set(panels) == {"matrices", "xticklabels", "yticklabels", "titles"}
    second, first = panels["matrices"]
    assert torch.equal(first, weights[0, :3, :3])  # 3 output steps (with <eos>) over "1", "2", <eos>
    assert torch.equal(second, weights[1, :6, :5])  # no EOS: every step; the whole source
    assert panels["xticklabels"] == [["3", "4", "5", "6", "<eos>"], ["1", "2", "<eos>"]]
    assert panels["yticklabels"] == [["6", "5", "4", "3", "1", "0"], ["2", "1", "<eos>"]]
    assert panels["titles"] == ["3456 -> 654310", "12 -> 21"]
    for m, x, y in zip(panels["matrices"], panels["xticklabels"], panels["yticklabels"], strict=True):
        assert tuple(m.shape) == (len(y), len(x))


def test_alignment_panels_feed_show_heatmaps_when_sizes_agree():
    """Documented: show_heatmaps(**panels) works when every example has one size (plot_alignments otherwise)."""
    batch, tokens, weights = _decoded()
    weights = weights / weights.sum(-1, keepdim=True)
    same = alignment_panels(weights, batch, tokens, [0, 0])
    assert isinstance(show_heatmaps(**same), Figure)


@pytest.mark.parametrize(
    "weights, shown",
    [(torch.zeros(3, 6, 5), r"\(3, 6, 5\)"), (torch.zeros(6, 5), r"\(6, 5\)"), ([[0.0]], "list")],
    ids=["batch", "2-D", "list"],
)
def test_plot_alignments_weights_error_messages_open_no_figure(weights, shown):
    batch, tokens, _ = _decoded()
    with pytest.raises(ValueError, match=rf"weights must be \(B, T, S\) with B = 2 examples, got {shown}"):
        plot_alignments(weights, batch, tokens, [0])
    assert plt.get_fignums() == []


def _mesh_data(ax):
    meshes = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert len(meshes) == 1
    return torch.as_tensor(np.asarray(meshes[0].get_array(), dtype=np.float64))


def test_plot_alignments_one_panel_per_example_at_its_own_size():
    batch, tokens, weights = _decoded()
    weights = weights / weights.sum(-1, keepdim=True)
    fig = plot_alignments(weights, batch, tokens, [0, 1])
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 2 and len(fig.axes) == 3  # and one colour bar
    assert [ax.get_title() for ax in panels] == ["12 -> 21", "3456 -> 654310"]
    assert_close(_mesh_data(panels[0]).reshape(3, 3), weights[0, :3, :3].double())
    assert_close(_mesh_data(panels[1]).reshape(6, 5), weights[1].double())
    assert [t.get_text() for t in panels[0].get_xticklabels()] == ["1", "2", "<eos>"]
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["2", "1", "<eos>"]
    assert [t.get_text() for t in panels[1].get_yticklabels()] == ["6", "5", "4", "3", "1", "0"]
    assert all(ax.get_xlabel() == "source" for ax in panels) and panels[0].get_ylabel() == "output"


def test_plot_alignments_error_messages():
    batch, tokens, weights = _decoded()
    with pytest.raises(ValueError, match=r"indices must pick at least one example"):
        plot_alignments(weights, batch, tokens, [])
    with pytest.raises(ValueError, match=r"weights must be \(B, T, S\) with B = 2 examples"):
        plot_alignments(weights[:1], batch, tokens, [0])


# ----------------------------------------------------------------------------------------------
# plot_decoding_step
# ----------------------------------------------------------------------------------------------

STEP_WEIGHTS = torch.tensor([[0.1, 0.2, 0.7, 0.0], [0.6, 0.3, 0.1, 0.0], [0.2, 0.2, 0.2, 0.4]])  # (T = 3, S = 4)
SRC_LABELS, OUT_LABELS = ["1", "2", "3", "<eos>"], ["3", "2", "1"]


@pytest.mark.parametrize("step", [0, 1, 2])
def test_plot_decoding_step_bars_and_alignment_so_far(step):
    fig = plot_decoding_step(step, STEP_WEIGHTS, SRC_LABELS, OUT_LABELS)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    ax_bar, ax_map = fig.axes
    heights = [p.get_height() for p in ax_bar.patches]
    assert heights == pytest.approx(STEP_WEIGHTS[step].tolist())
    best = int(STEP_WEIGHTS[step].argmax())
    colours = [p.get_facecolor() for p in ax_bar.patches]
    assert [i for i, c in enumerate(colours) if colours.count(c) == 1] == [best]  # the most attended one stands out
    assert f"step {step}" in ax_bar.get_title() and f"writes {OUT_LABELS[step]}" in ax_bar.get_title()
    assert f"source position {best}" in ax_bar.get_title()
    assert [t.get_text() for t in ax_bar.get_xticklabels()] == SRC_LABELS
    assert ax_bar.get_xlabel() and ax_bar.get_ylabel() == "attention weight"
    shown = np.asarray(ax_map.get_images()[0].get_array(), dtype=np.float64)
    assert shown.shape == (3, 4)
    assert np.allclose(shown[: step + 1], STEP_WEIGHTS[: step + 1].numpy())
    assert np.isnan(shown[step + 1 :]).all()  # steps not decoded yet stay blank
    assert [t.get_text() for t in ax_map.get_yticklabels()] == OUT_LABELS
    assert [t.get_text() for t in ax_map.get_xticklabels()] == SRC_LABELS
    assert ax_map.get_xlabel() == "source token" and ax_map.get_ylabel() == "output token"


def test_plot_decoding_step_does_not_modify_the_weights(call_unmodified):
    call_unmodified(plot_decoding_step, 1, STEP_WEIGHTS, SRC_LABELS, OUT_LABELS)


@pytest.mark.parametrize(
    "step, weights, src_labels, out_labels, match",
    [
        (3, STEP_WEIGHTS, SRC_LABELS, OUT_LABELS, r"step must be an integer in \[0, 2\], got 3"),
        (-1, STEP_WEIGHTS, SRC_LABELS, OUT_LABELS, r"step must be an integer in \[0, 2\], got -1"),
        (1.0, STEP_WEIGHTS, SRC_LABELS, OUT_LABELS, r"step must be an integer in \[0, 2\], got 1\.0"),
        (True, STEP_WEIGHTS, SRC_LABELS, OUT_LABELS, r"step must be an integer in \[0, 2\], got True"),
        (0, STEP_WEIGHTS, SRC_LABELS[:3], OUT_LABELS, r"need S = 4 source labels and T = 3 output labels, got 3 and 3"),
        (0, STEP_WEIGHTS, SRC_LABELS, OUT_LABELS[:2], r"need S = 4 source labels and T = 3 output labels, got 4 and 2"),
        (0, STEP_WEIGHTS[None], SRC_LABELS, OUT_LABELS, r"weights must be a \(T, S\) tensor for one example, got"),
        (0, STEP_WEIGHTS.tolist(), SRC_LABELS, OUT_LABELS, r"weights must be a \(T, S\) tensor for one example, got"),
    ],
    ids=["step-too-large", "step-negative", "step-float", "step-bool", "src-labels", "out-labels", "3-D", "list"],
)
def test_plot_decoding_step_error_messages(step, weights, src_labels, out_labels, match, int_error):
    with pytest.raises(int_error(step), match=match):
        plot_decoding_step(step, weights, src_labels, out_labels)
    assert plt.get_fignums() == []


# ----------------------------------------------------------------------------------------------
# train_seq2seq: warm-up and the loss of every step
# ----------------------------------------------------------------------------------------------


def _learning_rates(monkeypatch, data, **kwargs):
    """The learning rate of every optimiser step of one training run."""
    seen = []
    original = torch.optim.Adam.step

    def step(self, *args, **kw):
        seen.append(self.param_groups[0]["lr"])
        return original(self, *args, **kw)

    monkeypatch.setattr(torch.optim.Adam, "step", step)
    history = train_seq2seq(_make("rnn"), data, **kwargs)
    return seen, history


def test_train_seq2seq_warmup_rises_linearly_then_follows_the_half_cosine(monkeypatch, data):
    lrs, history = _learning_rates(monkeypatch, data, epochs=2, batch_size=8, lr=1e-2, warmup=4)  # 16 steps
    assert len(lrs) == len(history.step_loss) == 16
    rise = [1e-2 * (1 / 4 + (1 - 1 / 4) * k / 4) for k in range(4)]  # from lr / warmup, by equal steps
    assert_close(torch.tensor(lrs[:4], dtype=torch.float64), torch.tensor(rise, dtype=torch.float64))
    cosine = [1e-2 * (1 + math.cos(math.pi * k / 12)) / 2 for k in range(12)]  # from the peak, over the 12 others
    assert_close(torch.tensor(lrs[4:], dtype=torch.float64), torch.tensor(cosine, dtype=torch.float64))
    assert max(lrs) == pytest.approx(1e-2)


def test_train_seq2seq_without_warmup_starts_at_the_peak(monkeypatch, data):
    lrs, history = _learning_rates(monkeypatch, data, epochs=1, batch_size=8, lr=1e-2)
    assert lrs[0] == pytest.approx(1e-2) and lrs[-1] < lrs[0]
    assert len(history.step_loss) == 8
    assert history.train_loss[0] == pytest.approx(sum(history.step_loss) / 8)  # equal batches: the plain mean


@pytest.mark.parametrize(
    "warmup, error, match",
    [
        (-1, ValueError, r"warmup must be an integer >= 0, got -1"),
        (1.5, TypeError, r"warmup must be an integer >= 0, got 1.5"),
        (True, TypeError, r"warmup must be an integer >= 0, got True"),
        (8, ValueError, r"warmup must be fewer than the 8 training steps, got 8"),
    ],
    ids=["negative", "float", "bool", "all-steps"],
)
def test_train_seq2seq_warmup_errors(warmup, error, match, data):
    with pytest.raises(error, match=match):
        train_seq2seq(_make("rnn"), data, epochs=1, batch_size=8, warmup=warmup)
