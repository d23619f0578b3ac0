# ruff: noqa: E501  (the mutant table keeps one mutant per row, like a rule table)
"""Plausible one-line bugs, applied one at a time, each against the tests that should catch it.

    python tools/mutations.py [--jobs 2] [--only ID,ID] [--out mutations.md]

Each mutant replaces one exact line fragment (it must occur exactly once) in a scratch copy of
the committed tree (`git archive HEAD`), then runs its targeted test subset there with a fresh C
kernel cache, imports pointed at the copy. "killed" means the subset failed; "survived" means the
suite would not notice the bug; "equivalent" is a survivor whose row carries the argument that no
input can tell it from the original (and a test showing the behaviour both share). Not part of CI: it takes minutes (issue 14 item 7).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

D = "tests/differential/"
ROUND = D + "test_rounding_midpoints.py"
VQF_CODECS = D + "test_vqf_codecs_fast_eq_ref.py"
MUT = D + "test_mutant_rounding.py"
RMS = D + "test_mutant_rmsnorm_fast_eq_ref.py"
BOARD_HARD = "tests/fast/qwen3/board/test_board_fast_hard_cases.py"


@dataclass(frozen=True)
class Mutant:
    id: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str
    #: why no test can tell this mutant from the original, when that was proven instead
    equivalent: str = ""


M = Mutant
MUTANTS = [
    # --- the six the issue found surviving -------------------------------------------------
    M("c-q8-reciprocal", "fast/csrc/vqf_codecs.c", "float scale = amax / 127.0f, inv;",
      "float scale = amax * (1.0f / 127.0f), inv;", (ROUND + "::test_vqf_q8_scale_midpoints_fast_eq_ref",),
      "Q8_0 scale as amax·(1/127) in the C encoder"),
    M("grouped-reciprocal", "fast/codecs/ninfer3/grouped_absmax.py",
      "raw32 = amax / np.float32(fmt.qmax)", "raw32 = amax * (np.float32(1) / np.float32(fmt.qmax))",
      (ROUND + "::test_ninfer_grouped_scale_midpoints_fast_eq_ref_eq_numpy",),
      "the same in the fast grouped_absmax"),
    M("bf16-ties-down", "fast/codecs/ninfer3/contiguous_le_v1.py", "rounded &= np.uint32(1)",
      "rounded &= np.uint32(0)", (ROUND + "::test_ninfer_bf16_ties_fast_eq_ref_eq_ml_dtypes",),
      "bf16 ties go down in the fast .ninfer codec"),
    M("fp8-scale-trunc", "fast/codecs/ninfer3/fp8_row_maxabs.py", "scale = bf16_rne(raw32)  # step 4",
      "scale = (raw32.view(np.uint32) >> np.uint32(16)).astype(np.uint16)",
      (ROUND + "::test_ninfer_fp8_row_scale_ties_fast_eq_ref_eq_ml_dtypes",),
      "truncation instead of RNE in the fp8 row scale"),
    M("c-f16-subnormal-ties-away", "fast/csrc/vqf_codecs.c",
      "q += (rem > half) || (rem == half && (q & 1u));", "q += (rem >= half);",
      (ROUND + "::test_vqf_q8_scale_midpoints_fast_eq_ref", ROUND + "::test_vqf_q8_0_scale_words_match_numpy"),
      "f16 subnormal ties away from zero in the C encoder"),
    M("mrope-n-sec", "ref/vqf/validate.py", "if n_sec > 4 or any(sections[n_sec:]):",
      "if any(sections[n_sec:]):", ("tests/ref/vqf/test_rule_conditions.py",),
      "the n_sec > 4 half of vqf.arch.mrope_sections"),
    # --- codecs ----------------------------------------------------------------------------
    M("c-f16-normal-ties-away", "fast/csrc/vqf_codecs.c",
      "((t + 0x0FFFu + ((t >> 13) & 1u)) >> 13)", "((t + 0x1000u) >> 13)",
      (ROUND + "::test_vqf_q8_0_scale_words_match_numpy",), "normal f16 ties away in C"),
    M("c-q8-half-up", "fast/csrc/vqf_codecs.c", "q[j] = (int8_t)sat(v + copysignf(0.5f, v), -127.0f, 127.0f);",
      "q[j] = (int8_t)sat(v + 0.5f, -127.0f, 127.0f);", (ROUND + "::test_vqf_q8_scale_midpoints_fast_eq_ref",),
      "Kestrel Q8 rounds negative halves up"),
    M("c-q8-ggml-rint", "fast/csrc/vqf_codecs.c", "q[j] = (int8_t)sat(roundf(v), -127.0f, 127.0f);",
      "q[j] = (int8_t)sat(rintf(v), -127.0f, 127.0f);", (ROUND + "::test_vqf_q8_scale_midpoints_fast_eq_ref",),
      "ggml Q8 ties to even instead of away"),
    M("c-q4-offset", "fast/csrc/vqf_codecs.c", "v = v + 8.5f; /* a separate", "v = v + 8.0f; /* a separate",
      (VQF_CODECS + "::test_encode_fast_equals_ref",), "Q4 offset 8 instead of 8.5"),
    M("c-q8-legacy-scale-rne", "fast/csrc/vqf_codecs.c",
      "d = mode == MODE_KESTREL ? f16_rne(scale) : f16_trunc_ftz(scale);", "d = f16_rne(scale);",
      (ROUND + "::test_vqf_q8_scale_midpoints_fast_eq_ref",), "legacy Q8 scale rounded instead of truncated"),
    M("fast-q8-floor", "fast/codecs/vqf/q8_0.py", "FLOOR = F32(1e-10)", "FLOOR = F32(1e-9)",
      (VQF_CODECS + "::test_encode_fast_equals_ref",), "Kestrel amax floor off by 10x"),
    M("fast-q8-half", "fast/codecs/vqf/q8_0.py", "    a += F32(0.5)\n", "    a += F32(0.49999997)\n",
      (ROUND + "::test_vqf_q8_scale_midpoints_fast_eq_ref",), "Kestrel half just below 0.5"),
    M("grouped-half-up", "fast/codecs/ninfer3/grouped_absmax.py", "np.rint(n32, out=n32)",
      "np.floor(n32 + np.float32(0.5), out=n32)",
      (ROUND + "::test_ninfer_grouped_scale_midpoints_fast_eq_ref_eq_numpy",), "grouped codes half up, not even"),
    M("grouped-rescue", "fast/codecs/ninfer3/grouped_absmax.py", "RESCUE_SCALE = 0x0001", "RESCUE_SCALE = 0x0002",
      (D + "test_ninfer3_row_split_k128_v1_fast_eq_ref.py", MUT + "::test_grouped_underflowing_scale_gets_the_rescue_word"),
      "grouped rescue scale word"),
    M("grouped-clamp", "fast/codecs/ninfer3/grouped_absmax.py", "np.minimum(n32, np.float32(fmt.qmax), out=n32)",
      "np.minimum(n32, np.float32(fmt.qmax + 1), out=n32)",
      (ROUND + "::test_ninfer_grouped_scale_midpoints_fast_eq_ref_eq_numpy",), "grouped clamp one too high"),
    M("fp8-code-half-up", "fast/codecs/ninfer3/fp8_row_maxabs.py", "word += np.uint32(0x7FFFF)",
      "word += np.uint32(0x80000)", (ROUND + "::test_ninfer_fp8_row_scale_ties_fast_eq_ref_eq_ml_dtypes",
                                     MUT + "::test_fp8_code_ties_and_subnormals_fast_eq_ref_eq_ml_dtypes"),
      "E4M3FN codes tie up"),
    M("fp8-subnormal-floor", "fast/codecs/ninfer3/fp8_row_maxabs.py",
      "sub = np.rint(magnitude[small] * np.float32(512.0))", "sub = np.floor(magnitude[small] * np.float32(512.0))",
      (D + "test_ninfer3_row_scale_v1_fast_eq_ref.py", MUT + "::test_fp8_code_ties_and_subnormals_fast_eq_ref_eq_ml_dtypes"),
      "E4M3FN subnormal codes truncated"),
    M("fp8-rescue", "fast/codecs/ninfer3/fp8_row_maxabs.py", "RESCUE_SCALE = 0x0001", "RESCUE_SCALE = 0x0000",
      (D + "test_ninfer3_row_scale_v1_fast_eq_ref.py", MUT + "::test_fp8_row_whose_scale_underflows_is_refused"),
      "fp8 rescue scale lost",
      "a row gets scale word 0 only if amax/448 < 2^-134; the rescue word 0x0001 is 2^-133, whose inverse 2^133 "
      "exceeds FLT_MAX, so step 5 refuses the row (inverse_overflow) with either word and no word is ever written"),
    M("bf16-nan-payload", "fast/codecs/ninfer3/contiguous_le_v1.py", "| np.uint32(0x7FC0)", "| np.uint32(0x7F80)",
      (D + "test_ninfer3_contiguous_le_v1_fast_eq_ref.py", MUT + "::test_bf16_nan_words_fast_eq_ref_are_quiet_nans"),
      "bf16 NaN becomes Inf"),
    M("fast-f16-nan", "fast/codecs/vqf/f16.py", "h = np.where(nan, sign | np.uint16(0x7E00), h)",
      "h = np.where(nan, sign | np.uint16(0x7C01), h)",
      (VQF_CODECS + "::test_encode_fast_equals_ref", MUT + "::test_vqf_f16_nan_words_fast_eq_ref"),
      "f16 NaN payload"),
    # --- validators ------------------------------------------------------------------------
    M("vqf-head-dim-full", "ref/vqf/validate.py", 'if a["head_dim_full"] != a["head_dim"]:',
      'if a["head_dim_full"] > a["head_dim"]:', ("tests/ref/vqf/test_rules.py", "tests/ref/vqf/test_mutant_reserved_arch.py"),
      "head_dim_full only checked one way"),
    M("ninfer-object-order", "ref/ninfer3/directory.py", "entry.offset >= prev_end,",
      "entry.offset + 1 >= prev_end,", ("tests/ref/ninfer3/test_ninfer3_rules.py",), "objects may overlap by one byte"),
    M("ninfer-object-bounds", "ref/ninfer3/directory.py", "entry.end <= payload_bytes,",
      "entry.end <= payload_bytes + 1,", ("tests/ref/ninfer3/test_ninfer3_rules.py",), "an object may end past the payload"),
    M("ninfer-objects-empty", "ref/ninfer3/directory.py", 'require(len(value) > 0, "ninfer3.objects.empty"',
      'require(len(value) >= 0, "ninfer3.objects.empty"', ("tests/ref/ninfer3/test_ninfer3_rules.py",),
      "an empty objects array accepted"),
    # --- kernels and the forward pass ----------------------------------------------------------
    M("c-fnv-prime", "fast/csrc/fnv1a64.c", "#define WF_FNV_PRIME 0x100000001b3ULL",
      "#define WF_FNV_PRIME 0x100000001b5ULL", (D + "test_vqf_fnv1a64_fast_eq_ref.py",), "FNV prime typo"),
    M("c-rmsnorm-eps", "fast/csrc/model_ops.c", "float r = 1.0f / sqrtf(ss / (float)n + eps);",
      "float r = 1.0f / sqrtf(ss / (float)n) + eps;", ("tests/fast/test_model_ops.py", RMS), "eps outside the sqrt"),
    M("c-rmsnorm-order", "fast/csrc/model_ops.c", "out[row * n + i] = (v[i] * r) * w[i];",
      "out[row * n + i] = v[i] * (r * w[i]);", ("tests/fast/test_model_ops.py", RMS), "norm products reassociated"),
    M("c-attn-scale", "fast/csrc/model_ops.c", "const float scale = 1.0f / sqrtf((float)head_dim);",
      "const float scale = 1.0f / sqrtf((float)head_dim + 1.0f);", (D + "test_attend_fast_eq_ref.py",),
      "attention scale off"),
    M("ref-rms-eps", "ref/numerics/norm.py", "return ONE / np.sqrt(mean + eps)", "return ONE / np.sqrt(mean)",
      ("tests/ref/numerics/test_numerics_ops.py",), "ref RMSNorm without eps"),
    # --- issue 36: where hand-made one-line bugs survived the suite ----------------------------
    M("gguf-user-defined-as-control", "weightfile/convert/vqf_gguf.py", "int(gguf.TokenType.USER_DEFINED)",
      "int(gguf.TokenType.CONTROL)", ("tests/convert/test_gguf_export_metadata.py",),
      "GGUF export types a non-special added token (Qwen3's <think>) CONTROL, not USER_DEFINED"),
    M("gguf-key-length-hidden-heads", "weightfile/convert/vqf_gguf.py", 'w.add_key_length(int(a["head_dim"]))',
      'w.add_key_length(int(a["dim"]) // int(a["n_heads"]))', ("tests/convert/test_gguf_export_metadata.py",),
      "GGUF attention.key_length = hidden / heads instead of head_dim"),
    M("c-avx2-leftover-rows", "fast/csrc/qmatvec_x86.c", "    while (r0 + 4 <= r1) {",
      "    while (r0 + 3 <= r1) {",
      ("tests/fast/test_kernel_bounds.py::test_quantized_products_stay_inside_payload_activations_and_outputs",),
      "AVX2 row groups of 4 run one leftover row too far: writes past the output, reads past the payload"),
    M("vl-pos-weight-fraction", "ref/qwen3_vl/numerics.py", "w1 = max(ONE - abs(a - ONE), ZERO)",
      "w1 = max(a, ZERO)", ("tests/ref/qwen3_vl/test_pos_embed_oracle.py",),
      "vision position weight w1 = a: exact for fractions >= 0.5, one ulp off below (grids > 2x the table side)"),
    M("image-min-pixels-inclusive", "weightfile/frontend/image.py", "elif h_bar * w_bar < min_pixels:",
      "elif h_bar * w_bar <= min_pixels:", ("tests/frontend/test_image_boundaries.py",),
      "smart_resize grows a rounded area that is exactly min_pixels"),
    M("sm2-no-on-curve", "ref/crypto/sm2.py", "1 <= si <= N - 1) or not on_curve(pub):",
      "1 <= si <= N - 1):", ("tests/ref/crypto/test_sm2_off_curve.py",),
      "SM2 verify without the public key's on-curve check (invalid-curve forgery accepted)"),
    M("vqf-one-byte-pad", "ref/vqf/validate.py", "        if e.end < pad_end:",
      "        if e.end + 1 < pad_end:", ("tests/ref/vqf/test_pad_lengths.py",),
      "the validator skips a 1-byte pad"),
    M("vqf-write-temp-kept", "ref/staging.py",
      "        with contextlib.suppress(FileNotFoundError):\n            os.unlink(tmp)\n", "",
      ("tests/reliability/test_failed_write_cleanup.py",),
      "a failed VQF write leaves its temp until the next write's sweep"),
    M("board-act-reciprocal", "fast/csrc/board.c", "float t = v[k] / d + 0.5f;",
      "float t = v[k] * (1.0f / d) + 0.5f;",
      (BOARD_HARD + "::test_activation_codes_near_midpoints_at_any_scale",),
      "board activation code as x·(1/d) instead of x/d"),
    M("board-q8-prefill-fma", "fast/csrc/board.c", "acc = acc + s * (float)wfb_idot(wb, xb, 0, QB);",
      "acc = fmaf(s, (float)wfb_idot(wb, xb, 0, QB), acc);",
      (BOARD_HARD + "::test_q8_prefill_chain_is_unfused_and_q4_prefill_fused",),
      "board Q8 prefill chain fused instead of multiply then add"),
    M("neon-dot-tail-lane", "fast/csrc/ops_body.h", "l[i % WF_LANES] = l[i % WF_LANES] + a[i] * b[i];",
      "l[i % W] = l[i % W] + a[i] * b[i];",
      ("tests/fast/neon/test_neon_tails.py::test_every_tail_term_in_its_lane_under_neon",),
      "dot tail term i in lane i mod 4 (the NEON register width) instead of i mod 8"),
    M("neon-sum-tail-lane", "fast/csrc/ops_body.h", "l[i % WF_LANES] = l[i % WF_LANES] + a[i];",
      "l[i % W] = l[i % W] + a[i];",
      ("tests/fast/neon/test_neon_tails.py::test_every_softmax_tail_term_in_its_lane_under_neon",),
      "softmax sum tail term i in lane i mod 4 instead of i mod 8"),
]  # fmt: skip


def _scratch_tree(dest: Path) -> None:
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


#: Imports of `weightfile.*` go to the scratch copy, not the editable install of the worktree.
SITE = """
import importlib.abc, importlib.util, os, sys
ROOTS = {"weightfile": "weightfile", "weightfile.spec": "spec", "weightfile.ref": "ref",
         "weightfile.fast": "fast", "weightfile.conformance": "conformance"}
BASE = os.environ["WF_MUTANT_TREE"]
class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in ROOTS:
            folder = os.path.join(BASE, ROOTS[name])
            return importlib.util.spec_from_file_location(
                name, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
        return None
sys.meta_path.insert(0, _Finder())
"""


def run_one(m: Mutant, keep: bool = False) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"wf-mutant-{m.id}-"))
    start = time.time()
    try:
        tree = tmp / "tree"
        tree.mkdir()
        _scratch_tree(tree)
        target = tree / m.path
        text = target.read_text()
        if text.count(m.old) != 1:
            return {"id": m.id, "result": "not applied", "detail": f"{text.count(m.old)} matches"}
        target.write_text(text.replace(m.old, m.new))
        site = tmp / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITE)
        env = dict(os.environ, WF_MUTANT_TREE=str(tree), WEIGHTFILE_CACHE=str(tmp / "cache"))
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(tree / "tests")])
        env.pop("CI", None)
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-W", "ignore",
               "--hypothesis-profile=ci", *m.tests]  # fmt: skip
        out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
        last = (out.stdout.strip().splitlines() or [""])[-1]
        result = "killed" if out.returncode == 1 else "survived" if out.returncode == 0 else "error"
        if result == "survived" and m.equivalent:
            result = "equivalent"
        return {"id": m.id, "result": result, "detail": last, "seconds": round(time.time() - start)}
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if not a.only or m.id in a.only.split(",")]
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = [pool.submit(run_one, m) for m in chosen]
        for f in concurrent.futures.as_completed(futures):  # progress as each one ends
            r = f.result()
            print(f"{r['id']}: {r['result']} -- {r['detail']}", flush=True)
        results = [f.result() for f in futures]
    lines = ["| mutant | bug | tests | result |", "|---|---|---|---|"]
    for m, r in zip(chosen, results, strict=True):
        tests = ", ".join(t.split("/")[-1] for t in m.tests)
        lines.append(
            f"| `{m.id}` | {m.why} | {tests} | {r['result']} ({r.get('seconds', '-')} s) |"
        )
        print(f"{m.id}: {r['result']} -- {r['detail']}", flush=True)
    killed = sum(r["result"] == "killed" for r in results)
    same = [m for m, r in zip(chosen, results, strict=True) if r["result"] == "equivalent"]
    lines.append(f"\n{killed} of {len(results)} killed, {len(same)} equivalent (proven, see below)")
    lines.extend(f"- `{m.id}` is equivalent: {m.equivalent}" for m in same)
    report = "\n".join(lines) + "\n"
    print(report)
    if a.out:
        Path(a.out).write_text(report)
    return 0 if killed + len(same) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
