"""The decoder's operations on hand-derived cases, its trace, shapes, MRoPE and sampling."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from strategies.model import quantized, random_weights, tiny_config

from weightfile.ref.layers.batch import text_position_ids
from weightfile.ref.layers.sampling import SplitMix64, generate, greedy, sample
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.qwen3.trace import trace_names
from weightfile.ref.qwen3.weights import widen_f16
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

F = np.float32
CONFIG = tiny_config()


def make_model(**overrides) -> Qwen3Model:
    c = tiny_config(**overrides)
    return Qwen3Model(c, random_weights(c, seed=3))


MODEL = make_model()


def vec(*xs: float) -> list[np.float32]:
    return [F(x) for x in xs]


def test_attention_over_one_position_returns_its_value_per_kv_group() -> None:
    # 4 query heads, 2 kv heads: heads 0,1 read kv head 0; heads 2,3 read kv head 1. With one
    # position the softmax is exactly [1], so each head's output is its kv head's v.
    q = vec(*range(32))
    keys = [[vec(*[1] * 8), vec(*[2] * 8)]]
    values = [[vec(*range(8)), vec(*range(10, 18))]]
    out = MODEL.attend(q, keys, values)
    assert out == vec(*range(8), *range(8), *range(10, 18), *range(10, 18))


def test_attention_with_equal_scores_averages() -> None:
    q = vec(*[0] * 32)  # all scores 0 -> p = [0.5, 0.5]; o = (0 + 0.5 v0) + 0.5 v1
    keys = [[vec(*[1] * 8)] * 2, [vec(*[3] * 8)] * 2]
    values = [[vec(*[2] * 8), vec(*[4] * 8)], [vec(*[6] * 8), vec(*[8] * 8)]]
    assert MODEL.attend(q, keys, values) == vec(*[4] * 16, *[6] * 16)


def test_swiglu_hand_case() -> None:
    assert MODEL.kernels.swiglu(vec(0, 100), vec(5, 2)) == vec(0, 200)  # silu(0)=0, silu(100)=100


def test_embedding_is_a_row_lookup() -> None:
    assert MODEL.embed([5])[0] == list(MODEL.weights.embed[5])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        MODEL.embed([CONFIG.vocab_size])


def test_f16_embedding_widens_exactly() -> None:
    bits = np.array([0x3C00, 0x0001, 0xFC00, 0x7BFF], dtype=np.uint16)
    assert widen_f16(bits).tolist() == [1.0, 2.0**-24, -np.inf, 65504.0]


def test_trace_names_shapes_and_logits() -> None:
    rec = TraceRecorder()
    logits = MODEL.forward([1, 2, 3], MODEL.new_cache(), trace=rec)
    arrays = rec.arrays()
    assert list(arrays) == trace_names(CONFIG.num_hidden_layers)
    assert (arrays["logits"].view(np.uint32) == logits.view(np.uint32)).all()
    c = CONFIG
    widths = {"embed": c.hidden_size, "layers.1.k_rope": c.kv_dim, "layers.0.q_norm": c.q_dim}
    widths |= {"layers.0.swiglu": c.intermediate_size, "logits": c.vocab_size}
    for name, width in widths.items():
        assert arrays[name].shape == (3, width)


def test_text_mrope_equals_plain_rope_and_visual_ids_differ() -> None:
    plain = MODEL
    mrope = Qwen3Model(replace(CONFIG, mrope_section=(2, 1, 1)), plain.weights)
    a = plain.forward([4, 5, 6], plain.new_cache())
    b = mrope.forward([4, 5, 6], mrope.new_cache())
    assert (a.view(np.uint32) == b.view(np.uint32)).all()
    visual = [(0, 0, 0), (1, 1, 2), (1, 2, 1)]  # an image-like grid: h and w differ from t
    c = mrope.forward([4, 5, 6], mrope.new_cache(), position_ids=visual)
    assert (a[0] == c[0]).all() and not (a[1:] == c[1:]).all()
    assert text_position_ids(2, 2) == [(2, 2, 2), (3, 3, 3)]


def test_untied_head_is_used() -> None:
    c = tiny_config(tie_word_embeddings=False)
    m = Qwen3Model(c, random_weights(c, seed=3, untied=True))
    tied = Qwen3Model(c, replace(m.weights, lm_head=None))
    assert not (m.forward([1], m.new_cache()) == tied.forward([1], tied.new_cache())).all()


def test_shape_mismatch_is_refused() -> None:
    w = random_weights(CONFIG, seed=3)
    with pytest.raises(ValueError, match="final_norm"):
        Qwen3Model(CONFIG, replace(w, final_norm=np.ones(5, dtype=np.float32)))
    with pytest.raises(ValueError, match="layers"):
        Qwen3Model(CONFIG, replace(w, layers=w.layers[:1]))


def test_quantized_modes_are_close_but_not_equal() -> None:
    w = random_weights(CONFIG, seed=5, make=quantized)
    eng = Qwen3Model(CONFIG, w)
    f32w = Qwen3Model(CONFIG, w, CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS))
    a = eng.forward([1, 2], eng.new_cache())
    b = f32w.forward([1, 2], f32w.new_cache())
    assert not (a == b).all()
    assert np.abs(a - b).max() < 0.05 * np.abs(b).max()  # activation quantization error only


# --- sampling ---------------------------------------------------------------------------


def test_splitmix64_known_answers() -> None:
    rng = SplitMix64(0)  # the published SplitMix64 sequence for seed 0
    assert [rng.next_u64() for _ in range(2)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]


def test_greedy_takes_first_maximum() -> None:
    assert greedy(vec(1, 3, 3, 2)) == 1


def test_sampling_is_seeded_and_follows_the_distribution() -> None:
    logits = vec(0, 0, -50, 0)  # token 2 has probability ~e^-50
    picks = [sample(logits, 1.0, SplitMix64(s), MODEL.kernels) for s in range(40)]
    assert 2 not in picks and {0, 1, 3} <= set(picks)
    again = [sample(logits, 1.0, SplitMix64(s), MODEL.kernels) for s in range(40)]
    assert picks == again


def test_generate_greedy_continues_the_argmax_chain() -> None:
    out = generate(MODEL, [1, 2], max_new_tokens=3)
    cache = MODEL.new_cache()
    want, logits = [], MODEL.forward([1, 2], cache)[-1]
    for _ in range(3):
        want.append(int(np.argmax(logits)))
        logits = MODEL.forward([want[-1]], cache)[0]
    assert out == want
    eos = want[-1]
    assert generate(MODEL, [1, 2], max_new_tokens=3, eos_id=eos) == want[: want.index(eos)]
    s1 = generate(MODEL, [1, 2], 4, temperature=1.0, seed=9)
    assert s1 == generate(MODEL, [1, 2], 4, temperature=1.0, seed=9)


def test_every_product_goes_through_the_kernels() -> None:
    """The decoder calls its numerics only through the profile's kernels (spec/numerics.md
    §profiles): every projection of every token is one kernels.matvec call."""
    from dataclasses import fields

    from weightfile.ref.numerics.kernels import Kernels

    seen: list[tuple[int, int]] = []

    class Spy(Kernels):
        def matvec(self, m, x):
            seen.append(m.shape)
            return super().matvec(m, x)

    k = MODEL.kernels
    spy = Qwen3Model(CONFIG, MODEL.weights)
    spy.kernels = Spy(**{f.name: getattr(k, f.name) for f in fields(k)})
    logits = spy.forward([1, 2], spy.new_cache())
    assert (logits == MODEL.forward([1, 2], MODEL.new_cache())).all()
    assert (CONFIG.vocab_size, CONFIG.hidden_size) in seen  # the lm_head
    assert len(seen) == 2 * (7 * CONFIG.num_hidden_layers + 1)  # 7 projections a layer + head
