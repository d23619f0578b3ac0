"""spec/vqf.md §engine-defaults: would a default engine load the file — every combination of the
five layout bits with ENC and SIGNED (128 flag sets), against a closed-form oracle written from
spec/vqf.md §loader-chain step 10, §decisions item 13 and §sm2-signature by hand (not the settings
search the check makes)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from weightfile.ref.vqf.engine_load import engine_load
from weightfile.spec.vqf.flags import VQFFlag as F

ARCH = {"n_layers": 2, "n_experts": 0}


@dataclass(frozen=True)
class E:
    name: str
    qtype: int
    rows: int
    bytes: int


def entries(flags: int) -> list[E]:
    emb = 0x05 if flags & F.EMB_F16 else 0x01
    out = [E("token_embed", emb, 256, 256 * 64 * 2), E("attn_norm", 0x01, 128, 512)]
    out += [E("q8_q", 0x02, 128, 4352), E("q4_q", 0x03, 128, 2304)]
    if flags & F.X8:
        out.append(E("x8_q", 0x04, 128, 2304))
    return out


def oracle(flags: int) -> tuple[bool, str | None]:
    """(loads with default settings, the variables needed, or None when nothing loads it)."""
    bits = (F.Q8_8X8, F.Q4_4X4, F.X8, F.Q8BUF_Q4, F.G256)
    q8, q4, x8, q4i, g256 = (bool(flags & f) for f in bits)
    if x8:
        return False, None  # no engine holds X8
    if q4i and (q8 or g256):
        return False, None  # the q4i switch turns the q8 repack off and replaces the weight mode
    env = []
    if not q4i and not q8:
        env.append("VLLM_DISABLE_Q8_REPACK=1")
    if not q4:
        env.append("VLLM_DISABLE_Q4_REPACK=1")
    if g256:
        env.append("VLLM_WMODE=g256")
    if flags & F.ENC:
        env.append("VLLM_VQF_KEY=<passphrase>")
        if flags & F.SIGNED:
            env.append("VLLM_VQF_SIGN_PUB=<signer's public key>")
    return not env, " ".join(env)


FLAG_SETS = [
    layout | protect | F.EMB_F16
    for layout in range(32)
    for protect in (0, int(F.ENC), int(F.SIGNED), int(F.ENC | F.SIGNED))
]


@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: f"{f:#05x}")
def test_every_flag_combination_against_the_hand_oracle(flags: int) -> None:
    report = engine_load(flags, ARCH, entries(flags))
    default, needs = oracle(flags)
    assert report.loads_by_default == default
    if default:
        assert report.needs == () and report.summary().startswith("a default engine loads it")
    elif needs is None:
        assert report.needs is None and "no engine settings load it" in report.summary()
    else:
        assert " ".join(report.needs or ()) == needs
        assert report.summary().endswith("it loads with " + needs)


def test_the_defaults_are_the_tiled_file_and_the_switched_q4i_file() -> None:
    loadable = [f for f in range(32) if engine_load(f | 0x20, ARCH, entries(f | 0x20)).needs == ()]
    assert loadable == [0x03, 0x0A]  # Q8_8X8|Q4_4X4 (q8, q4, dual) and Q8BUF_Q4|Q4_4X4 (q4i)


def test_a_mounted_tensor_of_another_qtype_loads_by_no_setting() -> None:
    es = [E("token_embed", 0x05, 256, 32768), E("q8_q", 0x01, 128, 32768)]  # an f32 import
    report = engine_load(0x23, ARCH, es)
    assert report.needs is None and "q8_q has qtype 0x01" in report.summary()
    es[0] = E("token_embed", 0x01, 256, 65536)  # F32 embedding read as F16 (EMB_F16 set)
    assert engine_load(0x23, ARCH, [es[0], E("q8_q", 0x02, 128, 4352)]).needs is None


def test_missing_core_tensors_load_by_no_setting() -> None:
    report = engine_load(0x23, ARCH, [E("token_embed", 0x05, 256, 32768)])
    assert report.needs is None and "q8_q or q4_q" in report.summary()
    moe = engine_load(0x223, {"n_layers": 2, "n_experts": 0}, entries(0x23))
    assert moe.needs is None and "moe_router" in moe.summary() and "n_experts" in moe.summary()


def test_streaming_needs_per_layer_tensors_that_split() -> None:
    assert engine_load(0x23, ARCH, entries(0x23)).streaming
    odd = [*entries(0x23), E("ffn_norm", 0x01, 129, 516)]
    report = engine_load(0x23, ARCH, odd)
    assert report.loads_by_default and not report.streaming  # loads, unstreamed
    assert "(unstreamed)" in report.summary()
    assert not engine_load(0x23 | F.ENC, ARCH, entries(0x23)).streaming  # never for ENC
