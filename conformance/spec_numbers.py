"""Every number the specifications state that the corpus generator re-checks (README, "Spec
numbers"). Each check returns a list of problems (empty: the number holds); `check_all` runs them
and the generator refuses to write a corpus when one fails. Codec checks run the reference codecs
on the spec's inputs; framing checks read the generated case files themselves.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np

from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.codecs.vqf import codec as vqf_codec
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec, layout_directory, plan_objects
from weightfile.spec.codecs.ninfer3.layouts import encoded_size
from weightfile.spec.codecs.vqf.registry import payload_size

Files = dict[str, bytes]
Check = Callable[[Files], list[str]]
NINFER = "ninfer3/v1/valid"


def expect(what: str, got: object, want: object) -> list[str]:
    return [] if got == want else [f"{what}: got {got!r}, spec says {want!r}"]


def f32s(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def spec_66_input() -> np.ndarray:
    """spec/vqf.md §test-vectors: x_i = f32((i − 12)·0.1), i = 0..31."""
    return np.array([(i - 12) * 0.1 for i in range(32)], dtype=np.float32)


# -- vqf.md ------------------------------------------------------------------------------------


def vqf_6_6(_: Files) -> list[str]:
    """spec/vqf.md §test-vectors test vectors: the Q8_0 and Q4_0 blocks of x_i, and the all-zero
    blocks."""
    x, zero = spec_66_input().reshape(1, 32), np.zeros((1, 32), np.float32)
    q8, q4 = vqf_codec("q8_0"), vqf_codec("q4_0")
    q8_hex = "a923b0b6bdc4cbd1d8dfe5ecf3f900070d141b21282f353c434a50575e646b72787f"
    return [
        *expect("§6.6 Q8_0 block", q8.encode(x, 1, 32).hex(), q8_hex),
        *expect(
            "§6.6 Q4_0 block", q4.encode(x, 1, 32).hex(), "9ab36d6d5c5c5b4b4b3a3a39292818180707"
        ),
        *expect("§6.6 Q8_0 zero block", q8.encode(zero, 1, 32), bytes(34)),
        *expect("§6.6 Q4_0 zero block", q4.encode(zero, 1, 32).hex(), "003c" + "88" * 16),
    ]


def vqf_5_2(_: Files) -> list[str]:
    """spec/vqf.md §f16: f32 1e-6 → 0x0000 under the truncating converter (RNE would give
    0x0011)."""
    f16, x = vqf_codec("f16"), f32s(1e-6).reshape(1, 1)
    return [
        *expect("§5.2 trunc_ftz(1e-6)", f16.encode(x, 1, 1, mode="trunc_ftz").hex(), "0000"),
        *expect("§5.2 rne(1e-6)", f16.encode(x, 1, 1, mode="rne").hex(), "1100"),
    ]


def vqf_5_9(_: Files) -> list[str]:
    """spec/vqf.md §size-function sizes: 4N, 2N, ceil(N/32)·34, ceil(N/32)·18; spec/vqf.md
    §q8-tiled, §q4-0, §q4-8x8l group blocks 272/136/72/144."""
    want = {"f32": 4 * 40, "f16": 2 * 40, "q8_0": 2 * 34, "q4_0": 2 * 18, "q4i8": 2 * 34,
            "g256": 2 * 34}  # fmt: skip
    out = [f"§5.9 {n}: {payload_size(n, 1, 40)} != {w}" for n, w in want.items()
           if payload_size(n, 1, 40) != w]  # fmt: skip
    tiles = {"q8_0_8x8": 272, "q8_0_4x4": 136 * 2, "q4_0_4x4": 72 * 2, "q4_0_8x8l": 144}
    out += [f"§5.6-§5.8 {n}: {payload_size(n, 8, 32)} != {w}" for n, w in tiles.items()
            if payload_size(n, 8, 32) != w]  # fmt: skip
    return out


def vqf_5_6_address(_: Files) -> list[str]:
    """spec/vqf.md §q8-tiled: in 8x8, row m's code j of a block sits at 16 + 32·(j div 4) + 4m + (j
    mod 4)."""
    x = (np.arange(256, dtype=np.float32) % 61 - 30).reshape(8, 32)
    payload = vqf_codec("q8_0_8x8").encode(x, 8, 32)
    codes = vqf_codec("q8_0").decode_words(vqf_codec("q8_0").encode(x, 8, 32), 8, 32)["codes"]
    bad = [
        (m, j)
        for m in range(8)
        for j in range(32)
        if struct.unpack_from("b", payload, 16 + 32 * (j // 4) + 4 * m + j % 4)[0] != codes[m, j]
    ]
    return [f"§5.6 8x8 code address wrong at (row, lane) {bad[:3]}"] if bad else []


# -- spec/ninfer3.md ------------------------------------------------------------------------------


def ninfer_1_9_tiny(files: Files) -> list[str]:
    """spec/ninfer3.md §framing-numbers hand-made tiny file: json_bytes 4064, size 4,361, header
    hex, payload layout."""
    blob = files[f"{NINFER}/single/tiny/model.ninfer"]
    head = "4e494e4645520003" + "e00f000000000000" + bytes(range(16)).hex()
    return [
        *expect("§1.9 tiny size", len(blob), 4361),
        *expect("§1.9 tiny header", blob[:32].hex(), head),
        *expect("§1.9 tiny fp32 2.0 at 256", blob[4096 + 256 : 4096 + 260].hex(), "00000040"),
        *expect("§1.9 tiny hello at 260", blob[4096 + 260 :], b"hello"),
    ]


def ninfer_1_9_large(files: Files) -> list[str]:
    """spec/ninfer3.md §framing-numbers limit 12,288 and a 27,610-byte resource: sizes 12,288 ×3 and
    7,130, part 2 header."""
    folder = f"{NINFER}/sharded/large-resource"
    names = ["large.ninfer"] + [f"large.ninfer.part-{i:04d}" for i in (1, 2, 3)]
    sizes = [len(files.get(f"{folder}/{n}", b"")) for n in names]
    part2 = files.get(f"{folder}/large.ninfer.part-0002", b"")[:16].hex()
    return [
        *expect("§1.9 large file sizes", sizes, [12288, 12288, 12288, 7130]),
        *expect("§1.9 part 2 header", part2, "4e494e5052540003" + "0200000000000000"),
    ]


def ninfer_1_9_cpp(files: Files) -> list[str]:
    """spec/ninfer3.md §framing-numbers C++ fixture: payloads 500 / 780 / 64, so files 4096 + 500 /
    4096 + 780 / 4096 + 64."""
    folder = f"{NINFER}/sharded/cpp-fixture"
    sizes = [len(files[f"{folder}/{n}"]) for n in ("weights-second.bin", "optional.bin")]
    return expect("§1.9 C++ fixture part sizes", sizes, [4096 + 780, 4096 + 64])


def ninfer_sizes(_: Files) -> list[str]:
    """spec/ninfer3.md §worked-sizes worked sizes, spec/ninfer3.md §block-scale nvfp4 [128,64] =
    4612, spec/ninfer3.md §row-scale fp8 [2,4] = 260."""
    cases = [
        ("q5_g64_fp16", "row_split_k128_v1", (2, 130), 528),
        ("q4_g64_fp16", "row_split_k128_v1", (256, 128), 17_408),
        ("q5_g64_fp16", "row_split_k128_v1", (256, 128), 21_504),
        ("q4_g64_fp16", "row_split_k128_v1", (7168, 5120), 19_496_960),
        ("q8_g32_fp16", "row_split_k128_v1", (7168, 5120), 38_993_920),
        ("t2_g128_fp16", "row_split_k128_v1", (7168, 5120), 9_748_480),
        ("fp8_e4m3fn_row_bf16", "row_scale_v1", (14336, 5120), 73_428_992),
        ("nvfp4", "block_scale_k16_m128x4_v1", (14336, 5120), 41_287_684),
        ("nvfp4", "block_scale_k16_m128x4_v1", (128, 64), 4612),
        ("fp8_e4m3fn_row_bf16", "row_scale_v1", (2, 4), 260),
    ]
    return [
        f"§4.7 {f} {s}: {encoded_size(f, lay, s)} != {w}"
        for f, lay, s, w in cases
        if encoded_size(f, lay, s) != w
    ]


def grouped_words(fmt: str, values: list[float], shape: tuple[int, int]) -> dict[str, np.ndarray]:
    x = np.zeros(shape, np.float32)
    x.flat[: len(values)] = values
    codec = get_codec(fmt, "row_split_k128_v1")
    return codec.decode_words(codec.encode(x, shape), shape)


def ninfer_3_6(_: Files) -> list[str]:
    """spec/ninfer3.md §grouped-absmax worked vectors of the grouped_absmax encoder."""
    q4 = grouped_words("q4_g64_fp16", [1.0, -0.5, 0.25], (1, 64))
    tie = grouped_words("q4_g64_fp16", list(f32s(8.83681869506836, -3.156738519668579)), (1, 64))
    tiny = grouped_words("q4_g64_fp16", [1e-9], (1, 64))
    q8 = grouped_words("q8_g32_fp16", [127, -127, 63.5, -63.5, 0.5, -0.5], (1, 32))
    q5 = grouped_words("q5_g64_fp16", [1.0, -0.5, 0.25], (2, 130))
    return [
        *expect("§3.6 Q4 scale", int(q4["scales"][0, 0]), 0x3092),
        *expect("§3.6 Q4 codes", q4["codes"][0, :4].tolist(), [7, -4, 2, 0]),
        *expect("§3.6 Q4 tie scale", int(tie["scales"][0, 0]), 0x3D0D),
        *expect("§3.6 Q4 tie codes", tie["codes"][0, :2].tolist(), [7, -2]),
        *expect("§3.6 Q4 rescue scale", int(tiny["scales"][0, 0]), 0x0001),
        *expect("§3.6 Q4 rescue codes", int(np.abs(tiny["codes"]).sum()), 0),
        *expect("§3.6 Q8 scale", int(q8["scales"][0, 0]), 0x3C00),
        *expect("§3.6 Q8 codes", q8["codes"][0, :6].tolist(), [127, -127, 64, -64, 0, 0]),
        *expect("§3.6 Q5 row 0 scales", q5["scales"][0].tolist(), [0x2C44, 0, 0]),
        *expect("§3.6 Q5 codes", q5["codes"][0, :4].tolist(), [15, -8, 4, 0]),
        *q5_bytes(),
    ]


def q5_bytes() -> list[str]:
    """spec/ninfer3.md §grouped-absmax: the Q5 [2,130] payload's byte 0 = 0x8F, byte 1 = 0x04, 256 =
    0x02, 512.. = 44 2C."""
    x = np.zeros((2, 130), np.float32)
    x[0, :3] = [1.0, -0.5, 0.25]
    p = get_codec("q5_g64_fp16", "row_split_k128_v1").encode(x, (2, 130))
    got = [len(p), p[0], p[1], p[256], p[512:514].hex()]
    return expect("§3.6 Q5 packed bytes", got, [528, 0x8F, 0x04, 0x02, "442c"])


def row_split_bytes(fmt: str, codes: list[list[int]], scales: list[list[int]], k: int) -> bytes:
    """A row_split_k128_v1 payload from explicit words (the rest of each row 0)."""
    n = len(codes)
    c = np.zeros((n, k), np.int8)
    for r, row in enumerate(codes):
        c[r, : len(row)] = row
    s = np.array(scales, np.uint16)
    return get_codec(fmt, "row_split_k128_v1").encode_words({"codes": c, "scales": s}, (n, k))


def ninfer_4_3(_: Files) -> list[str]:
    """spec/ninfer3.md §row-split known packed bytes (group scales 1.5, 0.25) and the C++ fixture's
    Q5 [2,130]."""
    table = [  # format, K, first codes, base hex, high hex, scale_offset, total
        ("q4_g64_fp16", 65, [-8, -7, -1, 0, 1, 7], "980f71", "", 256, 260),
        ("q5_g64_fp16", 130, [-16, -15, -1, 0, 1, 15], "100ff1", "07", 512, 520),
        ("q6_g64_fp16", 65, [-32, -31, -17, -16, -1, 0, 15, 31], "100f0fff", "ea43", 512, 516),
        ("q8_g32_fp16", 33, [-127, -1, 0, 1, 127], "81ff00017f", "", 256, 264),
        ("t2_g128_fp16", 130, [-1, 0, 1, 1, -1, 0, 0, 1], "5343", "", 256, 260),
    ]
    out: list[str] = []
    for fmt, k, codes, base, high, scale_at, total in table:
        groups = -(-k // (32 if fmt.startswith("q8") else 128 if fmt.startswith("t2") else 64))
        p = row_split_bytes(fmt, [codes], [[0x3E00, 0x3400, 0, 0][:groups]], k)
        got = [p[: len(base) // 2].hex(), p[256 : 256 + len(high) // 2].hex(), len(p)]
        got.append(p[scale_at : scale_at + 4].hex())
        out += expect(f"§4.3 {fmt} K={k}", got, [base, high, total, "003e0034"])
    fmt = "q5_g64_fp16"
    p = row_split_bytes(fmt, [[1, -13], [2, 5]],
                        [[0x3800, 0x3C00, 0x3C00], [0x4000, 0x3C00, 0x3C00]], 130)  # fmt: skip
    w = get_codec(fmt, "row_split_k128_v1").decode(p, (2, 130))
    got = [p[0], p[128], p[256], [float(w[0, 0]), float(w[0, 1]), float(w[1, 0]), float(w[1, 1])]]
    return out + expect("§4.3 C++ fixture", got, [0x31, 0x52, 0x02, [0.5, -6.5, 4.0, 10.0]])


def ninfer_3_7(_: Files) -> list[str]:
    """spec/ninfer3.md §fp8-row-maxabs fp8_row_maxabs worked examples."""
    codec = get_codec("fp8_e4m3fn_row_bf16", "row_scale_v1")
    rows = [([1.0, -2.0, 0.30078125, -1e-6], 0x3B92, [0x76, 0xFE, 0x68, 0x80]),
            ([448.0, 1.0], 0x3F80, [0x7E, 0x38])]  # fmt: skip
    out: list[str] = []
    for values, scale, codes in rows:
        shape = (1, len(values))
        words = codec.decode_words(codec.encode(f32s(*values).reshape(shape), shape), shape)
        out += expect(f"§3.7 {values} scale", int(words["scales"][0]), scale)
        out += expect(f"§3.7 {values} codes", words["codes"][0].tolist(), codes)
    return out


def ninfer_4_5(_: Files) -> list[str]:
    """spec/ninfer3.md §row-scale: [2,4] codes 00 80 38 B8 / 40 C0 7E FE, scales 0.5 and 2.0 decode
    as stated."""
    codec = get_codec("fp8_e4m3fn_row_bf16", "row_scale_v1")
    codes = np.array([[0x00, 0x80, 0x38, 0xB8], [0x40, 0xC0, 0x7E, 0xFE]], dtype=np.uint8)
    payload = codec.encode_words(
        {"codes": codes, "scales": np.array([0x3F00, 0x4000], np.uint16)}, (2, 4)
    )
    got = codec.decode(payload, (2, 4)).astype(np.float32).view(np.uint32).tolist()
    want = f32s(0, -0.0, 0.5, -0.5, 4, -4, 896, -896).view(np.uint32).reshape(2, 4).tolist()
    return [*expect("§4.5 size", len(payload), 260), *expect("§4.5 decode bits", got, want)]


def ninfer_5_example_2(_: Files) -> list[str]:
    """spec/ninfer3.md §examples example 2 placed by the reference planner: offsets, and files under
    limit 64,000,000."""
    bf16, row = "bf16", "row_split_k128_v1"
    specs = [ResourceSpec("r.tokenizer", 12_809_320), ResourceSpec("r.tokenizer_config", 17_928),
             ResourceSpec("r.chat_template", 8_952), ResourceSpec("r.generation_config", 202),
             TensorSpec("w.embedding", (248320, 128), bf16, "contiguous_le_v1"),
             TensorSpec("w.final_norm", (128,), bf16, "contiguous_le_v1"),
             TensorSpec("w.head", (248320, 128), bf16, "contiguous_le_v1"),
             TensorSpec("w.layer0.input_norm", (128,), bf16, "contiguous_le_v1"),
             TensorSpec("w.layer0.post_attention_norm", (128,), bf16, "contiguous_le_v1"),
             TensorSpec("w.layer0.attn_qk", (256, 128), "q4_g64_fp16", row),
             TensorSpec("w.layer0.attn_gate_value", (256, 128), "q5_g64_fp16", row),
             TensorSpec("w.layer0.query_norm", (128,), bf16, "contiguous_le_v1"),
             TensorSpec("w.layer0.key_norm", (128,), bf16, "contiguous_le_v1"),
             TensorSpec("w.layer0.attn_output", (128, 128), bf16, "contiguous_le_v1"),
             TensorSpec("w.layer0.gate_up", (512, 128), bf16, "contiguous_le_v1"),
             TensorSpec("w.layer0.down", (128, 256), bf16, "contiguous_le_v1")]  # fmt: skip
    objects = plan_objects(specs)
    placed = {d["id"]: d["offset"] for d in objects}
    payload = objects[-1]["offset"] + objects[-1]["bytes"]
    root = {"components": {"text": {"config": {}}}, "objects": objects, "bindings": {}, "uses": []}
    text, files = layout_directory(root, payload, "ex2.ninfer", 64_000_000, 65_504)
    offsets = [placed[k] for k in ("w.embedding", "w.layer0.attn_qk", "w.layer0.down")]
    return [
        *expect("§5 ex2 offsets", offsets, [12_836_608, 139_977_216, 140_180_480]),
        *expect("§5 ex2 json_bytes", len(text), 65_504),
        *expect("§5 ex2 files", [f["payload_bytes"] for f in files],
                [63_934_464, 63_995_904, 12_315_648]),
    ]  # fmt: skip


#: (check id, check) in the order the README lists them.
CHECKS: tuple[tuple[str, Check], ...] = (
    ("spec/vqf.md §5.2 f16 1e-6", vqf_5_2),
    ("spec/vqf.md §5.6 8x8 code address", vqf_5_6_address),
    ("spec/vqf.md §5.6-§5.9 sizes", vqf_5_9),
    ("spec/vqf.md §6.6 test vectors", vqf_6_6),
    ("spec/ninfer3.md §1.9 tiny file", ninfer_1_9_tiny),
    ("spec/ninfer3.md §1.9 C++ fixture", ninfer_1_9_cpp),
    ("spec/ninfer3.md §1.9 large resource", ninfer_1_9_large),
    ("spec/ninfer3.md §3.6 worked vectors", ninfer_3_6),
    ("spec/ninfer3.md §3.7 worked examples", ninfer_3_7),
    ("spec/ninfer3.md §4.3 known packed bytes", ninfer_4_3),
    ("spec/ninfer3.md §4.5 example", ninfer_4_5),
    ("spec/ninfer3.md §4.4/§4.7 sizes", ninfer_sizes),
    ("spec/ninfer3.md §5 example 2 placement", ninfer_5_example_2),
)


def check_all(files: Files) -> list[str]:
    """Every problem found by every check (empty: the corpus agrees with the spec's numbers)."""
    return [f"{name}: {p}" for name, check in CHECKS for p in check(files)]
