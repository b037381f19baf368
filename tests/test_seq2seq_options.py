"""attn_course.seq2seq's options for notebook 07's exercises: the dot-product score, a forward-only encoder, and a
vocabulary of another size (the date task)."""

import pytest
import torch
from torch.testing import assert_close

from attn_course import AttentionDecoder, RNNSeq2Seq, Seq2SeqEncoder
from attn_course.masking import masked_softmax
from attn_course.tasks import EOS, make_batch


def test_dot_score_weights_are_the_scaled_dot_products_of_state_and_encoder_states():
    batch = make_batch(["1234", "56", "7"])
    torch.manual_seed(0)
    model = RNNSeq2Seq(score="dot", embed_size=6, num_hiddens=8).eval()
    assert model.decoder.attention is None and model.decoder.score == "dot"
    with torch.no_grad():
        enc_outputs, enc_last = model.encoder(batch.src, batch.src_len)
        state = model.decoder.init_state(enc_outputs, enc_last, batch.src_len)
        _, state, weights = model.decoder.step(batch.tgt_in[:, 0], state)
    scores = torch.einsum("bu,bsu->bs", enc_last, enc_outputs) / 8**0.5  # s_0 = the encoder's summary
    assert_close(weights, masked_softmax(scores.unsqueeze(1), batch.src_len)[:, 0])
    assert (weights[1, 3:] == 0).all() and (weights[2, 2:] == 0).all()  # padding gets no weight


def test_dot_score_has_no_attention_parameters_and_additive_default_is_unchanged():
    def count(m):
        return sum(p.numel() for p in m.parameters())

    torch.manual_seed(0)
    default = RNNSeq2Seq(embed_size=6, num_hiddens=8)
    torch.manual_seed(0)
    additive = RNNSeq2Seq(embed_size=6, num_hiddens=8, score="additive")
    dot = RNNSeq2Seq(embed_size=6, num_hiddens=8, score="dot")
    for a, b in zip(default.parameters(), additive.parameters(), strict=True):
        assert torch.equal(a, b)
    attention_params = sum(p.numel() for p in additive.decoder.attention.parameters())
    assert count(additive) - count(dot) == attention_params > 0


def test_forward_only_encoder_states_read_only_the_tokens_up_to_their_position():
    torch.manual_seed(0)
    encoder = Seq2SeqEncoder(embed_size=6, num_hiddens=8, bidirectional=False).eval()
    a, b = make_batch(["1234"]), make_batch(["1299"])  # the same first two digits
    with torch.no_grad():
        out_a, last_a = encoder(a.src, a.src_len)
        out_b, _ = encoder(b.src, b.src_len)
    assert out_a.shape == (1, 5, 8) and last_a.shape == (1, 8)
    assert_close(out_a[:, :2], out_b[:, :2])  # positions 0 and 1 have not read digit 2 yet
    assert not torch.allclose(out_a[:, 2], out_b[:, 2])
    assert_close(last_a, out_a[:, -1])  # the summary is the state at the last token


def test_forward_only_model_trains_and_decodes():
    batch = make_batch(["1234", "56"])
    torch.manual_seed(0)
    model = RNNSeq2Seq(bidirectional=False, embed_size=6, num_hiddens=7)  # one direction: U may be odd
    logits = model(batch.src, batch.src_len, batch.tgt_in)
    assert logits.shape == (2, 5, 13)
    tokens, weights = model.greedy(batch.src, batch.src_len, max_len=6)
    assert tokens.shape == (2, 6) and weights.shape == (2, 6, 5)


def test_vocab_size_sets_embedding_output_and_token_check():
    model = RNNSeq2Seq(embed_size=6, num_hiddens=8, vocab_size=20)
    src = torch.tensor([[15, 19, EOS]])
    tgt_in = torch.tensor([[1, 19, 15]])
    assert model(src, torch.tensor([3]), tgt_in).shape == (1, 3, 20)
    with pytest.raises(ValueError, match=r"src"):
        model(torch.tensor([[20, EOS]]), torch.tensor([2]), torch.tensor([[1, 3]]))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(score="cosine"), ValueError, r"score must be one of \['additive', 'dot'\], got 'cosine'"),
        (dict(score=1), TypeError, r"score must be one of \['additive', 'dot'\], got 1"),
        (dict(attention=False, score="dot"), ValueError, r"score='dot' needs attention=True"),
        (dict(bidirectional=1), TypeError, r"bidirectional must be True or False, got 1"),
        (dict(vocab_size=3), ValueError, r"vocab_size must be an integer >= 4, got 3"),
        (dict(vocab_size=12.0), TypeError, r"vocab_size must be an integer >= 4, got 12\.0"),
        (dict(num_hiddens=7), ValueError, r"num_hiddens must be even \(half per direction\), got 7"),
    ],
)
def test_options_are_checked(kwargs, error, message):
    with pytest.raises(error, match=message):
        RNNSeq2Seq(**kwargs)


def test_attention_decoder_score_is_checked():
    with pytest.raises(ValueError, match=r"score must be one of"):
        AttentionDecoder(score="general")
