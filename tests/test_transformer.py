"""attn_course.transformer: PositionWiseFFN, AddNorm, the blocks, TransformerSeq2Seq, plot_transformer_attention."""

import numpy as np
import pytest
import torch
from _helpers import heatmap_panels, named_cases
from matplotlib.collections import QuadMesh
from matplotlib.figure import Figure
from torch import nn
from torch.testing import assert_close

from attn_course import (
    AddNorm,
    DecoderBlock,
    EncoderBlock,
    PositionWiseFFN,
    TransformerSeq2Seq,
    causal_mask,
    plot_transformer_attention,
    positional_encoding,
)
from attn_course.tasks import BOS, EOS, PAD, VOCAB_SIZE, make_batch, to_text

SOURCES = ["1234", "56", "7"]  # S = 5 (4 digits + <eos>), src_len = [5, 3, 2]


def _batch():
    return make_batch(SOURCES)


def _model(dtype=torch.float32, seed=0, **kwargs):
    torch.manual_seed(seed)  # the same parameters for every call with the same seed
    config = {"num_hiddens": 16, "num_heads": 2, "num_layers": 2, "ffn_hiddens": 32, "max_len": 12, **kwargs}
    return TransformerSeq2Seq(**config).to(dtype).eval()


def _with_other_padding(src, src_len):
    """A copy of ``src`` whose PAD positions (at and after src_len) hold digits instead."""
    other = src.clone()
    other[torch.arange(src.shape[1]) >= src_len[:, None]] = 9
    return other


def _up_to_first_eos(tokens):
    """(B, T) bool: True at the positions up to and including each row's first EOS (all, if none)."""
    is_eos = (tokens == EOS).long()
    return is_eos.cumsum(dim=1) - is_eos == 0


# ----------------------------------------------------------------------------------------------
# PositionWiseFFN
# ----------------------------------------------------------------------------------------------


def test_ffn_hand_example():
    """x = [2, -1]: dense1 -> [2, -1, 3] + [0, 0, -1] = [2, -1, 2]; relu -> [2, 0, 2]; dense2 -> [4.5, -2]."""
    ffn = PositionWiseFFN(2, 3)
    with torch.no_grad():
        ffn.dense1.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]]))
        ffn.dense1.bias.copy_(torch.tensor([0.0, 0.0, -1.0]))
        ffn.dense2.weight.copy_(torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, -1.0]]))
        ffn.dense2.bias.copy_(torch.tensor([0.5, 0.0]))
        got = ffn(torch.tensor([[[2.0, -1.0]]]))
    assert_close(got, torch.tensor([[[4.5, -2.0]]]))


def test_ffn_shape_and_acts_on_each_position_alone(dtype, gen, call_unmodified):
    torch.manual_seed(0)
    ffn = PositionWiseFFN(8, 12).to(dtype)
    x = torch.randn(2, 5, 8, generator=gen, dtype=dtype)
    with torch.no_grad():
        y = call_unmodified(ffn, x)
        assert y.shape == (2, 5, 8) and y.dtype == dtype
        for t in range(5):
            assert_close(y[:, t : t + 1], ffn(x[:, t : t + 1]))
        perm = torch.tensor([3, 0, 4, 1, 2])
        assert_close(ffn(x[:, perm]), y[:, perm])


def test_ffn_parameter_count_does_not_depend_on_the_length():
    ffn = PositionWiseFFN(num_hiddens=32, ffn_hiddens=64)
    assert sum(p.numel() for p in ffn.parameters()) == 32 * 64 + 64 + 64 * 32 + 32


@pytest.mark.parametrize(
    "args, match",
    [
        ((0, 4), r"num_hiddens must be an integer >= 1, got 0"),
        ((4, 0), r"ffn_hiddens must be an integer >= 1, got 0"),
        ((4.0, 4), r"num_hiddens must be an integer >= 1, got 4\.0"),
    ],
    ids=["zero-hiddens", "zero-ffn", "float-hiddens"],
)
def test_ffn_size_error_messages(args, match, int_error):
    bad = args[0] if match.startswith("num_hiddens") else args[1]
    with pytest.raises(int_error(bad), match=match):
        PositionWiseFFN(*args)


# ----------------------------------------------------------------------------------------------
# AddNorm
# ----------------------------------------------------------------------------------------------


def test_addnorm_hand_example():
    """x + y = [1, 3]: mean 2, variance 1, so LayerNorm gives [-1, 1] (up to eps = 1e-5)."""
    got = AddNorm(2)(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 3.0]]))
    assert_close(got, torch.tensor([[-1.0, 1.0]]), atol=1e-5, rtol=0)


def test_addnorm_equals_layer_norm_of_the_sum(dtype, gen, call_unmodified):
    addnorm = AddNorm(6).to(dtype)
    with torch.no_grad():
        addnorm.norm.weight.copy_(torch.rand(6, generator=gen, dtype=dtype) + 0.5)
        addnorm.norm.bias.copy_(torch.randn(6, generator=gen, dtype=dtype))
    x, y = torch.randn(2, 4, 6, generator=gen, dtype=dtype), torch.randn(2, 4, 6, generator=gen, dtype=dtype)
    got = call_unmodified(addnorm, x, y)
    expected = nn.functional.layer_norm(x + y, (6,), addnorm.norm.weight, addnorm.norm.bias, eps=1e-5)
    assert got.shape == (2, 4, 6) and got.dtype == dtype
    assert_close(got, expected)


def test_addnorm_output_has_mean_0_and_variance_1_per_position(gen):
    x, y = torch.randn(3, 5, 8, generator=gen) * 4 + 2, torch.randn(3, 5, 8, generator=gen)
    with torch.no_grad():
        got = AddNorm(8)(x, y)
    assert_close(got.mean(-1), torch.zeros(3, 5), atol=1e-5, rtol=0)
    assert_close(got.var(-1, correction=0), torch.ones(3, 5), atol=1e-3, rtol=0)


def test_addnorm_dropout_is_off_in_eval_mode(gen):
    x, y = torch.randn(2, 3, 4, generator=gen), torch.randn(2, 3, 4, generator=gen)
    with torch.no_grad():
        assert_close(AddNorm(4, dropout=0.5).eval()(x, y), nn.functional.layer_norm(x + y, (4,)))


@pytest.mark.parametrize(
    "x_shape, y_shape, shown",
    [((2, 3, 4), (2, 3, 5), r"\(2, 3, 4\) and \(2, 3, 5\)"), ((2, 3, 4), (3, 4), r"\(2, 3, 4\) and \(3, 4\)")],
    ids=["size", "broadcast"],
)
def test_addnorm_shape_mismatch_error(x_shape, y_shape, shown):
    with pytest.raises(ValueError, match=rf"x and y must have the same shape for the residual sum, got {shown}"):
        AddNorm(4)(torch.zeros(x_shape), torch.zeros(y_shape))


# ----------------------------------------------------------------------------------------------
# EncoderBlock and DecoderBlock against torch.nn.TransformerEncoderLayer / TransformerDecoderLayer
# ----------------------------------------------------------------------------------------------


def _copy_attention(ours, theirs):
    """Our bias-free MultiHeadAttention into torch's: in_proj = [W_q; W_k; W_v], out_proj = W_o, zero biases."""
    theirs.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
    theirs.in_proj_bias.zero_()
    theirs.out_proj.weight.copy_(ours.W_o.weight)
    theirs.out_proj.bias.zero_()


def _copy_ffn_and_norms(ffn, norms, theirs):
    theirs.linear1.load_state_dict(ffn.dense1.state_dict())
    theirs.linear2.load_state_dict(ffn.dense2.state_dict())
    for i, addnorm in enumerate(norms, start=1):
        getattr(theirs, f"norm{i}").load_state_dict(addnorm.norm.state_dict())


def _perturb_norms(module, gen):
    """LayerNorm weights other than 1 and biases other than 0, so that copying them matters."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


def _block_and_torch_layer(block_cls, torch_cls, dtype, gen):
    """A course block (D = 8, H = 2, FFN 16, LayerNorms perturbed) and torch's layer holding the same weights."""
    torch.manual_seed(0)
    block = block_cls(num_hiddens=8, num_heads=2, ffn_hiddens=16)
    _perturb_norms(block, gen)
    ref = torch_cls(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    with torch.no_grad():
        if isinstance(block, EncoderBlock):
            _copy_attention(block.attention, ref.self_attn)
            norms = [block.addnorm1, block.addnorm2]
        else:
            _copy_attention(block.self_attention, ref.self_attn)
            _copy_attention(block.cross_attention, ref.multihead_attn)
            norms = [block.addnorm1, block.addnorm2, block.addnorm3]
        _copy_ffn_and_norms(block.ffn, norms, ref)
    return block.to(dtype), ref.to(dtype)


def test_encoder_block_matches_torch_transformer_encoder_layer(dtype, gen):
    block, ref = _block_and_torch_layer(EncoderBlock, nn.TransformerEncoderLayer, dtype, gen)
    x = torch.randn(3, 5, 8, generator=gen, dtype=dtype)
    src_len = torch.tensor([5, 3, 2])
    padding = torch.arange(5) >= src_len[:, None]  # torch's polarity: True = ignore this key
    got = block(x, src_len)
    expected = ref(x, src_key_padding_mask=padding)
    assert got.shape == (3, 5, 8) and got.dtype == dtype
    assert_close(got, expected)


def test_decoder_block_matches_torch_transformer_decoder_layer(dtype, gen):
    block, ref = _block_and_torch_layer(DecoderBlock, nn.TransformerDecoderLayer, dtype, gen)
    x = torch.randn(3, 4, 8, generator=gen, dtype=dtype)
    memory = torch.randn(3, 5, 8, generator=gen, dtype=dtype)
    src_len = torch.tensor([5, 3, 2])
    got = block(x, memory, src_len)
    expected = ref(
        x,
        memory,
        tgt_mask=~causal_mask(4),  # torch's polarity: True = may NOT attend
        memory_key_padding_mask=torch.arange(5) >= src_len[:, None],
    )
    assert got.shape == (3, 4, 8) and got.dtype == dtype
    assert_close(got, expected)
    assert (block.self_attention.attention_weights.triu(1) == 0).all()


# ----------------------------------------------------------------------------------------------
# TransformerSeq2Seq: teacher forcing
# ----------------------------------------------------------------------------------------------


def test_forward_shape_dtype_and_inputs_unmodified(dtype, call_unmodified):
    model = _model(dtype)
    batch = _batch()
    logits = call_unmodified(model, batch.src, batch.src_len, batch.tgt_in)
    assert logits.shape == (3, 5, VOCAB_SIZE) and logits.dtype == dtype
    assert torch.isfinite(logits).all()
    memory = call_unmodified(model.encode, batch.src, batch.src_len)
    assert memory.shape == (3, 5, 16)
    assert_close(call_unmodified(model.decode, batch.tgt_in, memory, batch.src_len), logits)


def test_embedding_starts_at_std_one_over_sqrt_d_and_is_scaled_by_sqrt_d():
    """Documented: init std D^-0.5 (not nn.Embedding's 1), then times sqrt(D), plus the positional encoding."""
    big = _model(num_hiddens=256, num_heads=4, num_layers=1, ffn_hiddens=8)
    std = float(big.embedding.weight.detach().std())
    assert abs(std - 256**-0.5) < 0.1 * 256**-0.5, std
    model = _model()
    inputs = {}

    def keep_input(name):
        def hook(module, args):
            inputs[name] = args[0].clone()  # returns None: the input is not replaced

        return hook

    model.encoder[0].register_forward_pre_hook(keep_input("encoder"))
    model.decoder[0].register_forward_pre_hook(keep_input("decoder"))
    batch = _batch()
    with torch.no_grad():
        model(batch.src, batch.src_len, batch.tgt_in[:, :3])
        pos = positional_encoding(5, 16)
        assert_close(inputs["encoder"], model.embedding.weight[batch.src] * 4.0 + pos)  # sqrt(16) = 4
        assert_close(inputs["decoder"], model.embedding.weight[batch.tgt_in[:, :3]] * 4.0 + pos[:3])


def test_source_padding_does_not_change_the_logits():
    """Other tokens at PAD positions, or each example alone without padding: the same logits."""
    model = _model()
    batch = _batch()
    with torch.no_grad():
        logits = model(batch.src, batch.src_len, batch.tgt_in)
        other = model(_with_other_padding(batch.src, batch.src_len), batch.src_len, batch.tgt_in)
        assert_close(other, logits)
        for b, n in enumerate(batch.src_len.tolist()):
            alone = model(batch.src[b : b + 1, :n], batch.src_len[b : b + 1], batch.tgt_in[b : b + 1])
            assert_close(alone[0], logits[b])


@pytest.mark.parametrize("t", [0, 1, 3])
def test_logits_at_t_do_not_depend_on_later_target_tokens(t):
    model = _model()
    batch = _batch()
    changed = batch.tgt_in.clone()
    changed[:, t + 1 :] = torch.tensor([7, 3, 11, 5, 9])[t + 1 :]
    with torch.no_grad():
        logits = model(batch.src, batch.src_len, batch.tgt_in)
        other = model(batch.src, batch.src_len, changed)
    assert_close(other[:, : t + 1], logits[:, : t + 1])
    assert not torch.allclose(other[:, t + 1 :], logits[:, t + 1 :])  # the later positions do see them


def test_dropout_only_in_training_mode():
    model = _model(dropout=0.3)
    batch = _batch()
    with torch.no_grad():
        assert torch.equal(model(batch.src, batch.src_len, batch.tgt_in), model(batch.src, batch.src_len, batch.tgt_in))
        model.train()
        torch.manual_seed(1)
        first = model(batch.src, batch.src_len, batch.tgt_in)
        assert not torch.allclose(first, model(batch.src, batch.src_len, batch.tgt_in))


# ----------------------------------------------------------------------------------------------
# attention_weights
# ----------------------------------------------------------------------------------------------


def test_attention_weights_before_any_forward_is_a_runtime_error():
    with pytest.raises(RuntimeError, match=r"no attention weights yet: call the model \(or greedy\) first"):
        _model().attention_weights()


def test_attention_weights_shapes_masks_and_rows(dtype):
    model = _model(dtype, num_layers=3)
    batch = _batch()
    tgt_in = batch.tgt_in[:, :4]
    with torch.no_grad():
        model(batch.src, batch.src_len, tgt_in)
    weights = model.attention_weights()
    assert set(weights) == {"encoder", "decoder", "cross"}
    assert weights["encoder"].shape == (3, 3, 2, 5, 5)  # (B, L, H, S, S)
    assert weights["decoder"].shape == (3, 3, 2, 4, 4)  # (B, L, H, T, T)
    assert weights["cross"].shape == (3, 3, 2, 4, 5)  # (B, L, H, T, S)
    assert (weights["decoder"].triu(1) == 0).all()
    assert (weights["decoder"][..., causal_mask(4)] > 0).all()
    for b, n in enumerate(batch.src_len.tolist()):
        assert (weights["encoder"][b, ..., n:] == 0).all() and (weights["cross"][b, ..., n:] == 0).all()
        assert (weights["cross"][b, ..., :n] > 0).all()
    for w in weights.values():
        assert w.dtype == dtype
        assert_close(w.sum(-1), torch.ones(w.shape[:-1], dtype=dtype))
    assert torch.equal(weights["cross"][:, 1], model.decoder[1].cross_attention.attention_weights)


# ----------------------------------------------------------------------------------------------
# greedy
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_len", [1, 4, 12])
def test_greedy_shapes_and_weights(max_len, call_unmodified):
    model = _model()
    batch = _batch()
    tokens, weights = call_unmodified(model.greedy, batch.src, batch.src_len, max_len)
    assert tokens.shape == (3, max_len) and tokens.dtype == torch.int64
    assert ((tokens >= 0) & (tokens < VOCAB_SIZE)).all()
    assert weights["encoder"].shape == (3, 2, 2, 5, 5)
    assert weights["decoder"].shape == (3, 2, 2, max_len, max_len)
    assert weights["cross"].shape == (3, 2, 2, max_len, 5)
    assert not tokens.requires_grad and not weights["cross"].requires_grad


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_takes_the_argmax_of_decode_on_its_own_prefix(seed):
    """Up to the first EOS, token t is the argmax of the logits at t given BOS and tokens 0..t-1."""
    model = _model(seed=seed)
    batch = _batch()
    tokens, weights = model.greedy(batch.src, batch.src_len, max_len=7)
    prefix = torch.cat([torch.full((3, 1), BOS), tokens[:, :-1]], dim=1)  # (B, 7)
    with torch.no_grad():
        logits = model(batch.src, batch.src_len, prefix)
        memory = model.encode(batch.src, batch.src_len)
        upto = _up_to_first_eos(tokens)
        assert torch.equal(logits.argmax(-1)[upto], tokens[upto])
        for t in (0, 3):  # the rows of the returned weights are those of the step that decoded token t
            model.decode(prefix[:, : t + 1], memory, batch.src_len)
            assert_close(weights["cross"][:, :, :, t], model.attention_weights()["cross"][:, :, :, t])


def test_greedy_pads_after_the_first_eos_and_feeds_its_predictions_back():
    """A decode whose last-position logits follow a script: the bookkeeping of greedy, by hand."""
    script = torch.tensor([[5, EOS, 7, EOS, 3], [4, 6, 8, 9, 3], [EOS, EOS, 4, 4, 4]])
    model = _model()
    real_decode, fed = model.decode, []

    def scripted_decode(tgt, memory, src_len):
        fed.append(tgt.clone())
        logits = real_decode(tgt, memory, src_len).clone()
        t = min(tgt.shape[1] - 1, script.shape[1] - 1)  # predicting token t
        logits[:, -1] = nn.functional.one_hot(script[:, t], VOCAB_SIZE).float() * 100
        return logits

    model.decode = scripted_decode
    batch = _batch()
    tokens, weights = model.greedy(batch.src, batch.src_len, max_len=5)
    assert tokens.tolist() == [[5, EOS, PAD, PAD, PAD], [4, 6, 8, 9, 3], [EOS, PAD, PAD, PAD, PAD]]
    assert (fed[0] == BOS).all() and fed[0].shape == (3, 1)
    assert fed[4][1].tolist() == [BOS, 4, 6, 8, 9]  # row 1 never ends: each prediction is the next input
    assert weights["cross"].shape == (3, 2, 2, 5, 5)


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------

SRC, SRC_LEN = torch.tensor([[4, 5, EOS], [6, EOS, PAD]]), torch.tensor([3, 2])
TGT_IN = torch.tensor([[BOS, 5], [BOS, 6]])


@pytest.mark.parametrize(
    "src, src_len, tgt_in, error, match",
    named_cases(
        {
            "src-list": ([[4, 5, EOS]], SRC_LEN, TGT_IN, TypeError, r"src must be a torch\.Tensor, got list"),
            "src-float": (
                SRC.float(),
                SRC_LEN,
                TGT_IN,
                TypeError,
                r"src must be a \(B, T\) int64 tensor of token ids, got torch\.float",
            ),
            "len-int32": (
                SRC,
                SRC_LEN.int(),
                TGT_IN,
                TypeError,
                r"src_len must be an int64 tensor of shape \(2,\), got torch\.int32",
            ),
            "len-too-long": (
                SRC,
                torch.tensor([3, 4]),
                TGT_IN,
                ValueError,
                r"src_len must lie in \[1, S = 3\], got \[3, 4\]",
            ),
            "tgt-float": (
                SRC,
                SRC_LEN,
                TGT_IN.float(),
                TypeError,
                r"tgt_in must be a \(B, T\) int64 tensor of token ids",
            ),
            "tgt-ids": (
                SRC,
                SRC_LEN,
                TGT_IN + 12,
                ValueError,
                r"tgt_in must hold token ids in \[0, 13\), got values 13\.\.18",
            ),
            "tgt-batch": (SRC, SRC_LEN, torch.tensor([[BOS, 5]] * 3), ValueError, r"tgt_in"),
            "src-long": (
                torch.full((2, 13), 4),
                torch.tensor([13, 2]),
                TGT_IN,
                ValueError,
                r"src has 13 positions; this model encodes at most max_len = 12",
            ),
            "tgt-long": (
                SRC,
                SRC_LEN,
                torch.full((2, 13), 4),
                ValueError,
                r"tgt_in has 13 positions; this model encodes at most max_len = 12",
            ),
        }
    ),
)
def test_forward_error_messages(src, src_len, tgt_in, error, match):
    """STYLE 5: also a tgt_in with another batch size than src is named (not 'queries, keys and values')."""
    with pytest.raises(error, match=match):
        _model()(src, src_len, tgt_in)


@pytest.mark.parametrize(
    "max_len, match",
    [
        (0, r"max_len must be an integer >= 1, got 0"),
        (2.0, r"max_len must be an integer >= 1, got 2\.0"),
        (True, r"max_len must be an integer >= 1, got True"),
        (13, r"max_len = 12"),
    ],
    ids=["zero", "float", "bool", "longer-than-the-model"],
)
def test_greedy_max_len_error_messages(max_len, match, int_error):
    with pytest.raises(int_error(max_len), match=match):
        _model().greedy(SRC, SRC_LEN, max_len)


def test_greedy_source_error_messages():
    with pytest.raises(ValueError, match=r"src_len must lie in \[1, S = 3\], got \[0, 2\]"):
        _model().greedy(SRC, torch.tensor([0, 2]), 3)
    with pytest.raises(TypeError, match=r"src must be a torch\.Tensor, got list"):
        _model().greedy(SRC.tolist(), SRC_LEN, 3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_hiddens": 30, "num_heads": 4}, r"num_hiddens = 30 must be divisible by num_heads = 4"),
        ({"num_hiddens": 0}, r"num_hiddens must be an integer >= 1, got 0"),
        ({"num_layers": 0}, r"num_layers must be an integer >= 1, got 0"),
        ({"max_len": 0}, r"max_len must be an integer >= 1, got 0"),
        ({"ffn_hiddens": 1.5}, r"ffn_hiddens must be an integer >= 1, got 1\.5"),
        ({"dropout": 1.0}, r"dropout must be a probability in \[0, 1\), got 1\.0"),
    ],
    ids=["not-divisible", "zero-hiddens", "zero-layers", "zero-max-len", "float-ffn", "dropout-1"],
)
def test_constructor_error_messages(kwargs, match, int_error, number_error):
    name = match.split()[0]
    bad = kwargs.get(name, 0)  # "num_hiddens = 30 must be divisible..." names no single bad argument: a wrong value
    with pytest.raises(number_error(bad) if name == "dropout" else int_error(bad), match=match):
        TransformerSeq2Seq(**kwargs)


# ----------------------------------------------------------------------------------------------
# plot_transformer_attention
# ----------------------------------------------------------------------------------------------


def _panel_data(ax):
    meshes = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert len(meshes) == 1
    return torch.as_tensor(np.asarray(meshes[0].get_array(), dtype=np.float64))


def _decoded():
    """A batch, greedy's weights for it, and tokens whose row 0 is set to ids 7 6 <eos> (the digits "43")."""
    model = _model()
    batch = _batch()
    tokens, weights = model.greedy(batch.src, batch.src_len, max_len=6)
    tokens = tokens.clone()
    tokens[0] = torch.tensor([7, 6, EOS, PAD, PAD, PAD])
    return batch, tokens, weights


@pytest.mark.parametrize(
    "kind, index, rows, cols, xticks, yticks, xlabel, ylabel",
    [
        ("cross", 0, 3, 5, ["1", "2", "3", "4", "<eos>"], ["<bos>", "4", "3"], "source", "decoder input"),
        ("decoder", 0, 3, 3, ["<bos>", "4", "3"], ["<bos>", "4", "3"], "decoder input", "decoder input"),
        ("encoder", 1, 3, 3, ["5", "6", "<eos>"], ["5", "6", "<eos>"], "source", "source"),
    ],
    ids=["cross", "decoder", "encoder"],
)
def test_plot_transformer_attention_one_panel_per_layer_and_head(
    kind, index, rows, cols, xticks, yticks, xlabel, ylabel
):
    """Each panel is the example's weights cut to its real size (up to the first EOS), labelled with its tokens.

    The decoder reads <bos> and the outputs before <eos>: those label the rows, and the columns of the
    decoder's self-attention (its keys are the same decoder inputs).
    """
    batch, tokens, weights = _decoded()
    fig = plot_transformer_attention(weights, batch, tokens, index=index, kind=kind)
    assert isinstance(fig, Figure)
    panels = heatmap_panels(fig)
    titles = ["layer 0, head 0", "layer 0, head 1", "layer 1, head 0", "layer 1, head 1"]  # counted from 0
    assert [ax.get_title() for ax in panels] == titles
    for i, ax in enumerate(panels):
        layer, head = divmod(i, 2)
        expected = weights[kind][index, layer, head, :rows, :cols].double()
        assert_close(_panel_data(ax).reshape(rows, cols), expected)
    bottom_left = panels[2]
    assert [t.get_text() for t in bottom_left.get_xticklabels()] == xticks
    assert [t.get_text() for t in bottom_left.get_yticklabels()] == yticks
    assert (bottom_left.get_xlabel(), bottom_left.get_ylabel()) == (xlabel, ylabel)
    assert fig.get_suptitle().endswith(f"{to_text(batch.src[index])} -> {to_text(tokens[index])}")
    assert fig.get_suptitle().endswith("1234 -> 43" if index == 0 else "56 -> " + to_text(tokens[1]))
    assert torch.equal(tokens, _decoded()[1])  # the tokens were not modified


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "self"}, r"kind must be one of \['encoder', 'decoder', 'cross'\], got 'self'"),
        ({"index": 3}, r"index must be an integer in \[0, 2\], got 3"),
        ({"index": True}, r"index must be an integer in \[0, 2\], got True"),
        ({"index": -1}, r"index must be an integer in \[0, 2\], got -1"),
    ],
    ids=["kind", "index-too-large", "index-bool", "index-negative"],
)
def test_plot_transformer_attention_error_messages(kwargs, match, int_error):
    batch, tokens, weights = _decoded()
    name = match.split()[0]
    with pytest.raises(int_error(kwargs[name]) if name == "index" else ValueError, match=match):
        plot_transformer_attention(weights, batch, tokens, **kwargs)


def test_plot_transformer_attention_rejects_other_weights():
    batch, tokens, weights = _decoded()
    with pytest.raises(TypeError, match=r"weights must be the dict of attention weights from TransformerSeq2Seq"):
        plot_transformer_attention(weights["cross"], batch, tokens)
    with pytest.raises(ValueError, match=r"weights must be the dict"):
        plot_transformer_attention({"encoder": weights["encoder"]}, batch, tokens, kind="cross")


# ----------------------------------------------------------------------------------------------
# norm_first: pre-norm blocks x + f(LN(x)) and the final LayerNorm of a pre-norm model
# ----------------------------------------------------------------------------------------------


def _zero_outputs(*layers):
    with torch.no_grad():
        for layer in layers:
            layer.weight.zero_()
            if layer.bias is not None:
                layer.bias.zero_()


def test_pre_norm_encoder_block_by_hand():
    torch.manual_seed(0)
    block = EncoderBlock(8, 2, 16, norm_first=True).eval()
    x, src_len = torch.randn(3, 5, 8), torch.tensor([5, 2, 1])
    with torch.no_grad():
        h = block.addnorm1.norm(x)
        y = x + block.attention(h, h, h, src_len)
        want = y + block.ffn(block.addnorm2.norm(y))
        assert_close(block(x, src_len), want)


def test_pre_norm_decoder_block_by_hand():
    torch.manual_seed(0)
    block = DecoderBlock(8, 2, 16, norm_first=True).eval()
    x, memory, src_len = torch.randn(2, 4, 8), torch.randn(2, 5, 8), torch.tensor([5, 3])
    with torch.no_grad():
        h = block.addnorm1.norm(x)
        y = x + block.self_attention(h, h, h, mask=causal_mask(4))
        h = block.addnorm2.norm(y)
        z = y + block.cross_attention(h, memory, memory, src_len)
        assert_close(block(x, memory, src_len), z + block.ffn(block.addnorm3.norm(z)))


def test_pre_norm_block_with_silent_sublayers_is_the_identity_and_post_norm_is_not():
    x, src_len = torch.randn(2, 4, 8) * 3 + 1, torch.tensor([4, 2])
    for norm_first in (True, False):
        torch.manual_seed(0)
        block = EncoderBlock(8, 2, 16, norm_first=norm_first).eval()
        _zero_outputs(block.attention.W_o, block.ffn.dense2)
        with torch.no_grad():
            out = block(x, src_len)
        if norm_first:
            assert torch.equal(out, x)
        else:
            assert_close(out, nn.functional.layer_norm(x, (8,)))


def test_post_norm_is_the_default_and_unchanged():
    torch.manual_seed(0)
    block = EncoderBlock(8, 2, 16).eval()
    x, src_len = torch.randn(2, 4, 8), torch.tensor([4, 2])
    with torch.no_grad():
        y = block.addnorm1(x, block.attention(x, x, x, src_len))
        assert_close(block(x, src_len), block.addnorm2(y, block.ffn(y)))
    assert block.norm_first is False


def test_pre_norm_model_adds_two_final_layer_norms():
    post, pre = _model(), _model(norm_first=True)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(pre) - count(post) == 2 * 2 * 16  # two LayerNorms of D = 16, gain and bias each
    assert isinstance(pre.encoder_norm, nn.LayerNorm) and isinstance(pre.decoder_norm, nn.LayerNorm)
    assert isinstance(post.encoder_norm, nn.Identity) and isinstance(post.decoder_norm, nn.Identity)
    batch = _batch()
    with torch.no_grad():
        memory = pre.encode(batch.src, batch.src_len)
    assert_close(memory.mean(-1), torch.zeros(memory.shape[:2]), atol=1e-5, rtol=0)  # normalised per position
    tokens, weights = pre.greedy(batch.src, batch.src_len, max_len=6)
    assert tokens.shape == (3, 6) and weights["cross"].shape[:3] == (3, 2, 2)


@pytest.mark.parametrize("cls", [EncoderBlock, DecoderBlock, TransformerSeq2Seq])
@pytest.mark.parametrize("value", [1, None, "yes"], ids=["int", "none", "str"])
def test_norm_first_must_be_a_bool(cls, value):
    args = (8, 2, 16) if cls is not TransformerSeq2Seq else ()
    with pytest.raises(TypeError, match=r"norm_first must be True or False, got"):
        cls(*args, norm_first=value)
