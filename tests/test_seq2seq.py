"""attn_course.seq2seq: the GRU encoder, the decoders with and without Bahdanau attention, RNNSeq2Seq."""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attn_course import AdditiveAttention, AttentionDecoder, RNNDecoder, RNNSeq2Seq, Seq2SeqEncoder
from attn_course._validate import require_source, require_target
from attn_course.tasks import BOS, EOS, PAD, VOCAB_SIZE, make_batch

SOURCES = ["1234", "56", "7"]  # S = 5 (4 digits + <eos>), src_len = [5, 3, 2]


def _batch():
    return make_batch(SOURCES)


def _model(attention, dtype=torch.float32, seed=0, embed_size=6, num_hiddens=8):
    torch.manual_seed(seed)  # the same parameters for every call with the same seed
    return RNNSeq2Seq(attention, embed_size, num_hiddens).to(dtype).eval()


def _with_other_padding(src, src_len):
    """A copy of ``src`` whose PAD positions (at and after src_len) hold digits instead."""
    other = src.clone()
    beyond = torch.arange(src.shape[1]) >= src_len[:, None]  # (B, S)
    other[beyond] = 9
    return other


def _up_to_first_eos(tokens):
    """(B, T) bool: True at the positions up to and including each row's first EOS (all, if none)."""
    is_eos = (tokens == EOS).long()
    return is_eos.cumsum(dim=1) - is_eos == 0


# ----------------------------------------------------------------------------------------------
# Seq2SeqEncoder
# ----------------------------------------------------------------------------------------------


def test_encoder_shapes_and_zeros_past_src_len(dtype, call_unmodified):
    torch.manual_seed(0)
    encoder = Seq2SeqEncoder(embed_size=6, num_hiddens=8).to(dtype)
    batch = _batch()
    outputs, last = call_unmodified(encoder, batch.src, batch.src_len)
    assert outputs.shape == (3, 5, 8) and last.shape == (3, 8)
    assert outputs.dtype == last.dtype == dtype
    for b, n in enumerate(batch.src_len.tolist()):
        assert (outputs[b, n:] == 0).all()
        assert (outputs[b, :n] != 0).any(dim=-1).all()


def _summary(encoder, h_n, outputs, n):
    """The documented summary: [forward state at the last token; backward state at the first] (bidirectional)."""
    if encoder.rnn.bidirectional:
        half = outputs.shape[-1] // 2
        return torch.cat([outputs[n - 1, :half], outputs[0, half:]]), torch.cat([h_n[0, 0], h_n[1, 0]])
    return outputs[n - 1], h_n[0, 0]


def test_encoder_packing_equals_the_gru_on_each_unpadded_sequence(dtype):
    """Each row's states and summary are those of the same GRU run on that row alone, without padding."""
    torch.manual_seed(1)
    encoder = Seq2SeqEncoder(embed_size=6, num_hiddens=8).to(dtype)
    batch = _batch()
    with torch.no_grad():
        outputs, last = encoder(batch.src, batch.src_len)
        for b, n in enumerate(batch.src_len.tolist()):
            ref_out, ref_h = encoder.rnn(encoder.embedding(batch.src[b : b + 1, :n]))  # (1, n, U), (dirs, 1, U/dirs)
            assert_close(outputs[b, :n], ref_out[0])
            from_outputs, from_h_n = _summary(encoder, ref_h, ref_out[0], n)
            assert_close(last[b], from_h_n)
            assert_close(last[b], from_outputs)
            if n < batch.src.shape[1]:  # reading the padding too would give another summary
                padded_out, padded_h = encoder.rnn(encoder.embedding(batch.src[b : b + 1]))
                assert not torch.allclose(last[b], _summary(encoder, padded_h, padded_out[0], n)[1])


def test_encoder_ignores_the_tokens_at_padded_positions():
    torch.manual_seed(2)
    encoder = Seq2SeqEncoder(embed_size=6, num_hiddens=8)
    batch = _batch()
    with torch.no_grad():
        outputs, last = encoder(batch.src, batch.src_len)
        other_outputs, other_last = encoder(_with_other_padding(batch.src, batch.src_len), batch.src_len)
    assert torch.equal(outputs, other_outputs) and torch.equal(last, other_last)


def test_encoder_rejects_bad_sizes():
    with pytest.raises(ValueError, match=r"embed_size must be an integer >= 1, got 0"):
        Seq2SeqEncoder(embed_size=0)
    with pytest.raises(TypeError, match=r"num_hiddens must be an integer >= 1, got 2\.5"):
        Seq2SeqEncoder(num_hiddens=2.5)
    with pytest.raises(ValueError, match=r"num_hiddens must be even \(half per direction\), got 7"):
        Seq2SeqEncoder(num_hiddens=7)


# ----------------------------------------------------------------------------------------------
# The decoders, one step at a time
# ----------------------------------------------------------------------------------------------


def test_attention_step_equals_additive_attention_then_gru(dtype):
    """Query = previous hidden state, keys = values = encoder states, masked with src_len; then the GRU and dense."""
    model = _model(True, dtype)
    decoder = model.decoder
    assert isinstance(decoder, AttentionDecoder) and isinstance(decoder.attention, AdditiveAttention)
    batch = _batch()
    with torch.no_grad():
        enc_outputs, enc_last = model.encoder(batch.src, batch.src_len)
        state = decoder.init_state(enc_outputs, enc_last, batch.src_len)
        hidden, prev = enc_last, torch.full((3,), BOS)
        for t in range(3):
            logits, state, weights = decoder.step(prev, state)
            context = decoder.attention(hidden[:, None], enc_outputs, enc_outputs, batch.src_len)[:, 0]  # (B, U)
            assert_close(weights, decoder.attention.attention_weights[:, 0])
            hidden = decoder.cell(torch.cat([decoder.embedding(prev), context], dim=-1), hidden)
            assert_close(state[0], hidden)
            assert_close(logits, decoder.dense(torch.cat([hidden, context], dim=-1)))
            assert logits.shape == (3, VOCAB_SIZE) and weights.shape == (3, 5) and weights.dtype == dtype
            for b, n in enumerate(batch.src_len.tolist()):
                assert (weights[b, n:] == 0).all() and (weights[b, :n] > 0).all()
            assert_close(weights.sum(-1), torch.ones(3, dtype=dtype))
            prev = batch.tgt_in[:, t + 1]


def test_rnn_decoder_reads_the_encoder_last_state_at_every_step(dtype):
    model = _model(False, dtype)
    decoder = model.decoder
    assert isinstance(decoder, RNNDecoder)
    batch = _batch()
    with torch.no_grad():
        enc_outputs, enc_last = model.encoder(batch.src, batch.src_len)
        state = decoder.init_state(enc_outputs, enc_last, batch.src_len)
        hidden = enc_last
        for t in range(3):
            prev = batch.tgt_in[:, t]
            logits, state, weights = decoder.step(prev, state)
            assert weights is None
            hidden = decoder.cell(torch.cat([decoder.embedding(prev), enc_last], dim=-1), hidden)
            assert_close(state[0], hidden)
            assert torch.equal(state[1], enc_last)  # the fixed context
            assert_close(logits, decoder.dense(hidden))


def test_attention_decoder_projects_the_keys_once_per_source():
    model = _model(True)
    calls = []
    model.decoder.attention.W_k.register_forward_hook(lambda *args: calls.append(1))
    batch = _batch()
    model.greedy(batch.src, batch.src_len, max_len=6)
    assert len(calls) == 1
    model(batch.src, batch.src_len, batch.tgt_in)
    assert len(calls) == 2


# ----------------------------------------------------------------------------------------------
# RNNSeq2Seq: teacher forcing
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("attention", [True, False], ids=["attention", "no-attention"])
def test_forward_shape_dtype_and_inputs_unmodified(attention, dtype, call_unmodified):
    model = _model(attention, dtype)
    batch = _batch()
    logits = call_unmodified(model, batch.src, batch.src_len, batch.tgt_in)
    assert logits.shape == (3, 5, VOCAB_SIZE) and logits.dtype == dtype
    assert torch.isfinite(logits).all()
    assert isinstance(model.decoder, AttentionDecoder if attention else RNNDecoder)


@pytest.mark.parametrize("attention", [True, False], ids=["attention", "no-attention"])
def test_forward_logits_do_not_depend_on_source_padding(attention):
    """Other tokens at PAD positions, or each example alone without padding: the same logits."""
    model = _model(attention)
    batch = _batch()
    with torch.no_grad():
        logits = model(batch.src, batch.src_len, batch.tgt_in)
        other = model(_with_other_padding(batch.src, batch.src_len), batch.src_len, batch.tgt_in)
        assert_close(other, logits, rtol=0, atol=0)
        for b, n in enumerate(batch.src_len.tolist()):
            alone = model(batch.src[b : b + 1, :n], batch.src_len[b : b + 1], batch.tgt_in[b : b + 1])
            assert_close(alone[0], logits[b])


@pytest.mark.parametrize("attention", [True, False], ids=["attention", "no-attention"])
def test_forward_step_t_depends_only_on_target_tokens_up_to_t(attention):
    model = _model(attention)
    batch = _batch()
    changed = batch.tgt_in.clone()
    changed[:, 3:] = 7
    with torch.no_grad():
        logits = model(batch.src, batch.src_len, batch.tgt_in)
        other = model(batch.src, batch.src_len, changed)
    assert_close(other[:, :3], logits[:, :3], rtol=0, atol=0)
    assert not torch.allclose(other[:, 3:], logits[:, 3:])


def test_models_with_and_without_attention_differ():
    batch = _batch()
    with_attention, without = _model(True), _model(False)
    assert sum(p.numel() for p in with_attention.parameters()) > sum(p.numel() for p in without.parameters())
    with torch.no_grad():
        assert not torch.allclose(
            with_attention(batch.src, batch.src_len, batch.tgt_in), without(batch.src, batch.src_len, batch.tgt_in)
        )


# ----------------------------------------------------------------------------------------------
# RNNSeq2Seq: greedy decoding
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_len", [1, 4, 9])
def test_greedy_shapes_and_attention_weights(max_len, dtype, call_unmodified):
    batch = _batch()
    tokens, weights = call_unmodified(_model(True, dtype).greedy, batch.src, batch.src_len, max_len)
    assert tokens.shape == (3, max_len) and tokens.dtype == torch.int64
    assert ((tokens >= 0) & (tokens < VOCAB_SIZE)).all()
    assert weights.shape == (3, max_len, 5) and weights.dtype == dtype and not weights.requires_grad
    for b, n in enumerate(batch.src_len.tolist()):
        assert (weights[b, :, n:] == 0).all()
    assert_close(weights.sum(-1), torch.ones(3, max_len, dtype=dtype))
    tokens, weights = call_unmodified(_model(False, dtype).greedy, batch.src, batch.src_len, max_len)
    assert tokens.shape == (3, max_len) and weights is None


@pytest.mark.parametrize("attention", [True, False], ids=["attention", "no-attention"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_takes_the_argmax_of_teacher_forcing_on_its_own_output(attention, seed):
    """Up to the first EOS, token t is the argmax of the logits given BOS and tokens 0..t-1."""
    model = _model(attention, seed=seed)
    batch = _batch()
    tokens, weights = model.greedy(batch.src, batch.src_len, max_len=7)
    with torch.no_grad():
        first = model(batch.src, batch.src_len, torch.full((3, 1), BOS))  # (B, 1, N)
        logits = model(batch.src, batch.src_len, torch.cat([torch.full((3, 1), BOS), tokens[:, :-1]], dim=1))
    assert torch.equal(first[:, 0].argmax(-1), tokens[:, 0])
    assert_close(logits[:, :1], first)
    upto = _up_to_first_eos(tokens)
    assert torch.equal(logits.argmax(-1)[upto], tokens[upto])


class _ScriptedDecoder(nn.Module):
    """Writes ``script[:, t]`` at step t (one-hot logits), records what it is fed, and 'attends' with weight t."""

    def __init__(self, script, num_src):
        super().__init__()
        self.script, self.num_src, self.fed = torch.tensor(script), num_src, []

    def init_state(self, enc_outputs, enc_last, src_len):
        return 0

    def step(self, prev, state):
        self.fed.append(prev.clone())
        logits = nn.functional.one_hot(self.script[:, state], VOCAB_SIZE).float()  # (B, N)
        return logits, state + 1, torch.full((prev.shape[0], self.num_src), float(state))


def test_greedy_pads_after_the_first_eos_and_feeds_its_predictions_back():
    script = [[5, EOS, 7, EOS, 3], [4, 6, 8, 9, 3], [EOS, EOS, 4, 4, 4]]
    model = _model(True)
    model.decoder = _ScriptedDecoder(script, num_src=5)
    batch = _batch()
    tokens, weights = model.greedy(batch.src, batch.src_len, max_len=5)
    expected = [[5, EOS, PAD, PAD, PAD], [4, 6, 8, 9, 3], [EOS, PAD, PAD, PAD, PAD]]
    assert tokens.tolist() == expected
    fed = model.decoder.fed
    assert len(fed) == 5 and (fed[0] == BOS).all()
    assert [int(f[1]) for f in fed[1:]] == [4, 6, 8, 9]  # row 1 never ends: each prediction is the next input
    assert (fed[1] == torch.tensor([5, 4, EOS])).all()
    assert torch.equal(weights, torch.arange(5.0)[None, :, None].expand(3, 5, 5))
    short, _ = model.greedy(batch.src, batch.src_len, max_len=2)
    assert short.tolist() == [row[:2] for row in expected]


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------

SRC, SRC_LEN = torch.tensor([[4, 5, EOS], [6, EOS, PAD]]), torch.tensor([3, 2])

BAD_SOURCES = [
    ([[4, 5, EOS]], SRC_LEN, TypeError, r"src must be a torch\.Tensor, got list"),
    (
        SRC.float(),
        SRC_LEN,
        TypeError,
        r"src must be a \(B, T\) int64 tensor of token ids, got torch\.float32",
    ),
    (SRC[0], SRC_LEN, ValueError, r"src must be a \(B, T\) int64 tensor of token ids, got shape \(3,\)"),
    (SRC + 11, SRC_LEN, ValueError, r"src must hold token ids in \[0, 13\), got values 11\.\.17"),
    (SRC, SRC_LEN.int(), TypeError, r"src_len must be an int64 tensor of shape \(2,\), got torch\.int32"),
    (
        SRC,
        torch.tensor([3, 2, 1]),
        ValueError,
        r"src_len must be an int64 tensor of shape \(2,\), got shape \(3,\)",
    ),
    (SRC, [3, 2], TypeError, r"src_len must be a torch\.Tensor, got list"),
    (SRC, torch.tensor([3, 0]), ValueError, r"src_len must lie in \[1, S = 3\], got \[3, 0\]"),
    (SRC, torch.tensor([4, 2]), ValueError, r"src_len must lie in \[1, S = 3\], got \[4, 2\]"),
]
BAD_SOURCE_IDS = ["src-list", "src-float", "src-1-D", "src-ids", "len-int32", "len-shape", "len-list", "len-0", "len-4"]


@pytest.mark.parametrize("src, src_len, error, match", BAD_SOURCES, ids=BAD_SOURCE_IDS)
@pytest.mark.parametrize("attention", [True, False], ids=["attention", "no-attention"])
def test_forward_and_greedy_source_error_messages(src, src_len, error, match, attention):
    model = _model(attention)
    with pytest.raises(error, match=match):
        model(src, src_len, torch.tensor([[BOS, 5], [BOS, 6]]))
    with pytest.raises(error, match=match):
        model.greedy(src, src_len, max_len=3)
    with pytest.raises(error, match=match):
        require_source(src, src_len, VOCAB_SIZE)


def test_require_source_accepts_a_batch():
    assert require_source(SRC, SRC_LEN, VOCAB_SIZE) is None
    batch = _batch()
    assert require_source(batch.src, batch.src_len, VOCAB_SIZE) is None


@pytest.mark.parametrize(
    "tgt_in, error, match",
    [
        ([[BOS, 5], [BOS, 6]], TypeError, r"tgt_in must be a torch\.Tensor, got list"),
        (torch.tensor([[1.0, 5.0], [1.0, 6.0]]), TypeError, r"tgt_in must be a \(B, T\) int64 tensor.*torch\.float32"),
        (
            torch.tensor([BOS, 5]),
            ValueError,
            r"tgt_in must be a \(B, T\) int64 tensor of token ids, got shape \(2,\)",
        ),
        (
            torch.tensor([[BOS, 13], [BOS, 6]]),
            ValueError,
            r"tgt_in must hold token ids in \[0, 13\), got values 1\.\.13",
        ),
        (torch.tensor([[BOS, 5], [BOS, 6], [BOS, 7]]), ValueError, r"tgt_in"),
    ],
    ids=["list", "float", "1-D", "ids", "batch-size"],
)
@pytest.mark.parametrize("attention", [True, False], ids=["attention", "no-attention"])
def test_forward_tgt_in_error_messages(tgt_in, error, match, attention):
    """STYLE 5: a tgt_in with another batch size than src is named, not a torch.cat size error deep inside."""
    with pytest.raises(error, match=match):
        _model(attention)(SRC, SRC_LEN, tgt_in)


@pytest.mark.parametrize("max_len, shown", [(0, "0"), (-1, "-1"), (2.0, r"2\.0"), (True, "True"), (None, "None")])
def test_greedy_max_len_error_messages(max_len, shown, int_error):
    with pytest.raises(int_error(max_len), match=rf"max_len must be an integer >= 1, got {shown}"):
        _model(True).greedy(SRC, SRC_LEN, max_len)


@pytest.mark.parametrize("attention, shown", [(1, "1"), ("yes", "'yes'"), (None, "None")])
def test_attention_flag_must_be_a_bool(attention, shown):
    with pytest.raises(TypeError, match=rf"attention must be True or False, got {shown}"):
        RNNSeq2Seq(attention)


def test_model_sizes_are_checked():
    with pytest.raises(ValueError, match=r"embed_size must be an integer >= 1, got 0"):
        RNNSeq2Seq(True, embed_size=0)
    with pytest.raises(ValueError, match=r"num_hiddens must be an integer >= 1, got -4"):
        RNNSeq2Seq(False, num_hiddens=-4)


def test_require_target_accepts_one_row_per_source_and_names_tgt_in_otherwise():
    src = torch.tensor([[3, 4, 2], [5, 2, 0]])
    assert require_target(torch.tensor([[1, 4], [1, 5]]), src, VOCAB_SIZE) is None  # (B, T) with the same B
    with pytest.raises(ValueError, match=r"tgt_in must have one row per source: shape \(2, T\), got \(3, 2\)"):
        require_target(torch.ones(3, 2, dtype=torch.long), src, VOCAB_SIZE)
    with pytest.raises(TypeError, match=r"tgt_in must be a \(B, T\) int64 tensor"):
        require_target(torch.ones(2, 2), src, VOCAB_SIZE)
