"""Qwen3-VL image encode side by side with llama.cpp's multimodal encoder, same weights, same image.

Not a test: `python benchmarks/vs_llamacpp_image.py [--build]` (issue 33 item 3).

* The model: the cached synthetic Qwen3-VL-2B VISION file (`weightfile bench --synthetic
  qwen3-vl-2b-q8_0`: 24 blocks, D 1024, 16 heads, Iv 4096, O 2048, a 48×48 position table,
  DeepStack [5, 11, 17], random Q8_0 block matrices, F32 patch embedding and mergers), and the
  projector GGUF that `weightfile convert FILE text.gguf --mmproj mmproj.gguf` writes from it
  (spec/vqf.md §mmproj-export): the same Q8_0 blocks and F32 values on both sides.
* llama.cpp: `benchmarks/mtmd_encode.cpp`, a small harness over libmtmd's clip encoder (llama.cpp
  0c1e570, the llama_cpp_python 0.3.36 sdist), compiled here against the built libmtmd.so; `--build`
  builds libmtmd first (vs_llamacpp.py's CMake configuration); without it the script says so and
  stops (exit 0). No text model is needed: the harness calls `clip_image_encode`, which is what
  `mtmd_encode_chunk` runs for an image (spec/vqf.md §mmproj-export says why the CLI cannot pair
  our text GGUF with the projector).
* The image: one seeded 448×448 RGB picture (28×28 patches, 196 image tokens), normalised once
  by our `hf` recipe; llama.cpp gets the same float32 pixels (height × width × 3), so both encode
  the same input. Encode seconds are the best of `--reps` encodes per side and round (llama.cpp's
  first encode of a process also reserves its compute buffers); GFLOP/s count 2 FLOPs per
  multiply-add of weightfile/bench/vision.py's `work_of` (linears and attention dots), the same
  work for both.
* Rounds interleave the two (the order alternates), between vs_llamacpp.py's contention probes;
  the ratio is llama.cpp's seconds ÷ ours (> 1: we are faster), per round and as medians of the
  quiet rounds (of all rounds when none was quiet, said so).
* Agreement: our image embeddings (the merger rows and the DeepStack rows, concatenated per token
  as llama.cpp returns them) against llama.cpp's, max |Δ| / max |value| and cosine, with the
  tolerance printed and checked (TOLERANCE: llama.cpp's arithmetic differs from the contract's,
  spec/vqf.md §mmproj-export, so never bit for bit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))  # vs_llamacpp.py beside this file

from vs_llamacpp import (
    PROBE_LIMIT,
    build_llama_bench,
    default_build_dir,
    git_commit,
    is_quiet,
    probe,
)

from weightfile.bench.machine import describe_machine
from weightfile.bench.vision import (
    IMAGE_SEED,
    IMAGE_SIDE,
    fast_vision_model,
    warm_up_image,
    work_of,
)
from weightfile.frontend.image import patchify, preprocess, settings_for
from weightfile.ref.qwen3_vl.vision import VisionInput
from weightfile.ref.vqf.read import open_vqf

HARNESS = Path(__file__).with_name("mtmd_encode.cpp")
SOURCE = Path("llama_cpp_python-0.3.36") / "vendor" / "llama.cpp"
#: Agreement bounds: cosine of the whole embedding and max |Δ| / max |value| (module docstring).
TOLERANCE = {"cosine": 0.999, "relative": 0.05}


# -- llama.cpp's side ---------------------------------------------------------------------------
def find_libmtmd(folder: Path, build: bool) -> Path | None:
    """build/bin/libmtmd.so under the llama.cpp build folder; with `build`, made when missing."""
    lib = folder / "build" / "bin" / "libmtmd.so"
    if lib.is_file() or not build:
        return lib if lib.is_file() else None
    build_llama_bench(folder, os.cpu_count() or 1)  # configures the tree (and builds llama-bench)
    subprocess.run(["cmake", "--build", str(folder / "build"), "-j", str(os.cpu_count() or 1),
                    "--target", "mtmd"], check=True)  # fmt: skip
    return lib if lib.is_file() else None


def build_harness(folder: Path, lib: Path, out_dir: Path | None = None) -> Path:
    """Compile mtmd_encode.cpp against the sources' headers and the built libraries, into
    `out_dir` (default: beside the libraries; redone when the harness is newer than the binary)."""
    out, src = (out_dir or lib.parent) / "wf-mtmd-encode", folder / SOURCE
    if out.is_file() and out.stat().st_mtime >= HARNESS.stat().st_mtime:
        return out
    includes = [f"-I{src / d}" for d in ("tools/mtmd", "include", "ggml/include")]
    subprocess.run(["c++", "-O2", "-std=c++17", *includes, str(HARNESS), f"-L{lib.parent}",
                    "-lmtmd", "-lggml", "-lggml-base", f"-Wl,-rpath,{lib.parent}", "-o",
                    str(out)], check=True)  # fmt: skip
    return out


def llama_encode(harness: Path, mmproj: Path, pixels: Path, side: int, threads: int, reps: int,
                 out: Path) -> list[float]:  # fmt: skip
    """Seconds of each of `reps` encodes in one harness process; the last embedding in `out`."""
    cmd = [str(harness), str(mmproj), str(pixels), str(side), str(side), str(threads), str(reps),
           str(out)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"llama.cpp's encoder failed ({done.returncode}): {done.stderr[-2000:]}")
    return [float(line.split()[1]) / 1e3 for line in done.stdout.splitlines()
            if line.startswith("encode_ms ")]  # fmt: skip


# -- ours -----------------------------------------------------------------------------------------
def our_encode(model: Any, image: VisionInput, reps: int) -> tuple[list[float], np.ndarray]:
    """Seconds of each of `reps` encodes and the embedding llama.cpp's way: per token the merger
    row, then each DeepStack row."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        o = model.encode_images([image])
        times.append(time.perf_counter() - start)
    return times, np.concatenate([o.embeds, *o.deepstack], axis=1)


def the_image(arch: dict[str, Any]) -> tuple[VisionInput, np.ndarray]:
    """The seeded picture through our `hf` recipe, and the same float32 pixels as H × W × 3 (the
    rows of the first are the patches of the second: checked)."""
    rgb = np.random.default_rng(IMAGE_SEED).integers(0, 256, (IMAGE_SIDE, IMAGE_SIDE, 3), np.uint8)
    s = settings_for(arch)
    prepared = preprocess(rgb, s, "hf")
    x = (rgb.astype(np.float64) * s.rescale_factor).astype(np.float32)
    hwc = (x - np.array(s.image_mean, np.float32)) / np.array(s.image_std, np.float32)
    same = patchify(np.ascontiguousarray(hwc.transpose(2, 0, 1)), s)
    if not np.array_equal(same.view(np.uint32), prepared.pixel_values.view(np.uint32)):
        raise SystemExit("the H x W x 3 pixels are not the patches our recipe makes")
    return VisionInput(prepared.pixel_values, prepared.grid_thw), np.ascontiguousarray(hwc)


def agreement(ours: np.ndarray, theirs: np.ndarray) -> dict[str, float]:
    d = np.abs(ours.astype(np.float64) - theirs)
    cos = float((ours * theirs.astype(np.float64)).sum()
                / np.linalg.norm(ours) / np.linalg.norm(theirs))  # fmt: skip
    return {"relative": float(d.max() / np.abs(ours).max()), "cosine": cos,
            "max_abs": float(d.max())}  # fmt: skip


def mmproj_for(vqf_path: Path) -> Path:
    from weightfile.convert.vqf_mmproj import export_mmproj
    from weightfile.demo import cache_root

    out = cache_root() / "gguf" / f"{vqf_path.stem}-mmproj.gguf"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        export_mmproj(vqf_path, out)
    return out


# -- the rounds -----------------------------------------------------------------------------------
def one_round(k: int, ctx: dict[str, Any], a: argparse.Namespace) -> dict[str, Any]:
    probes = [probe()]
    rows = {}
    for th in ctx["threads"]:
        sides = ["llama", "ours"] if (k + th) % 2 == 0 else ["ours", "llama"]
        got = {}
        for side in sides:
            if side == "llama":
                out = ctx["tmp"] / f"llama-{th}.f32"
                got[side] = min(llama_encode(ctx["harness"], ctx["mmproj"], ctx["pixels"],
                                             IMAGE_SIDE, th, a.reps, out))  # fmt: skip
            else:
                times, ctx["ours"][th] = our_encode(ctx["models"][th], ctx["image"], a.reps)
                got[side] = min(times)
        rows[th] = {"ours_s": got["ours"], "llama_s": got["llama"],
                    "ratio": got["llama"] / got["ours"]}  # fmt: skip
    probes.append(probe())
    quiet = is_quiet(probes, a.probe_limit)
    print(f"round {k + 1}: probes {[f'{r:.2f}/{s:.2f}' for r, s in probes]} "
          f"({'quiet' if quiet else 'contended'}), load {os.getloadavg()[0]:.1f}: "
          + ", ".join(f"x{th} {r['ours_s']:.2f} s vs {r['llama_s']:.2f} s = {r['ratio']:.2f}"
                      for th, r in rows.items()), flush=True)  # fmt: skip
    return {"quiet": quiet, "probes": probes, "rows": rows}


def table(rounds: list[dict[str, Any]], flops: float, threads: list[int]) -> list[str]:
    quiet = [r for r in rounds if r["quiet"]]
    use = quiet or rounds
    lines = [f"medians of {len(use)} {'quiet' if quiet else 'contended (none was quiet)'} "
             f"round(s); {flops / 1e9:.1f} GFLOP an image", "",
             "| threads | weightfile s | llama.cpp s | weightfile GFLOP/s | llama.cpp GFLOP/s "
             "| ratio (llama.cpp s ÷ ours) |", "|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for th in threads:
        ours = statistics.median(r["rows"][th]["ours_s"] for r in use)
        llama = statistics.median(r["rows"][th]["llama_s"] for r in use)
        ratio = statistics.median(r["rows"][th]["ratio"] for r in use)
        lines.append(f"| {th} | {ours:.2f} | {llama:.2f} | {flops / ours / 1e9:.1f} | "
                     f"{flops / llama / 1e9:.1f} | **{ratio:.2f}** |")  # fmt: skip
    return lines


def setup(a: argparse.Namespace, folder: Path, lib: Path, tmp: Path) -> dict[str, Any]:
    from weightfile.bench.synthetic import synthetic_model

    vqf_path, _ = synthetic_model(a.synthetic, progress=True)
    vqf = open_vqf(vqf_path)  # kept open: the fast models read its map
    image, hwc = the_image(vqf.header.arch)
    pixels = tmp / "pixels.f32"
    hwc.tofile(pixels)
    threads = [int(t) for t in a.threads.split(",")]
    models = {th: fast_vision_model(vqf, th) for th in threads}
    if any(m is None for m in models.values()):
        raise SystemExit("skipped: the fast engine has no C kernels here")
    c = models[threads[0]].vision.config
    for m in models.values():  # warm: library, tables, weight pages (one merge window)
        our_encode(m, warm_up_image(image, c.spatial_merge_size), 1)
    flops = 2.0 * work_of(c, image.pixel_values.shape[0]).total
    return {"vqf": vqf, "vqf_path": vqf_path, "mmproj": mmproj_for(vqf_path), "image": image,
            "pixels": pixels, "threads": threads, "models": models, "tmp": tmp, "ours": {},
            "harness": build_harness(folder, lib), "flops": flops}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/vs_llamacpp_image.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--build", action="store_true", help="build libmtmd when it is missing")
    p.add_argument("--build-dir", default=None, help="the llama.cpp build folder (default: "
                   "llama-build in the weightfile cache, as vs_llamacpp.py --build)")  # fmt: skip
    p.add_argument("--synthetic", default="qwen3-vl-2b-q8_0", help="a VISION synthetic model")
    p.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=2, help="quiet rounds wanted (default 2)")
    p.add_argument("--max-rounds", type=int, default=None, help="default 2 x --rounds")
    p.add_argument("--reps", type=int, default=2, help="encodes per side and round (best of)")
    p.add_argument("--probe-limit", type=float, default=PROBE_LIMIT)
    p.add_argument("--json", type=Path, default=None, help="write every number here")
    a = p.parse_args(argv)
    folder = Path(a.build_dir) if a.build_dir else default_build_dir()
    lib = find_libmtmd(folder, a.build)
    if lib is None or not (folder / SOURCE).is_dir():
        print(f"skipped: no libmtmd.so under {folder}/build/bin (or no llama.cpp sources beside "
              "it); run with --build (CMake and a C++ compiler) or --build-dir DIR")  # fmt: skip
        return 0
    with tempfile.TemporaryDirectory() as t:
        ctx = setup(a, folder, lib, Path(t))
        print(
            f"machine: {describe_machine()}; weightfile {git_commit()}, llama.cpp 0c1e570 "
            f"(libmtmd {lib}); model {ctx['vqf_path'].name}, projector {ctx['mmproj'].name}"
        )
        rounds: list[dict[str, Any]] = []
        while len(rounds) < (a.max_rounds or 2 * a.rounds):
            rounds.append(one_round(len(rounds), ctx, a))
            if sum(r["quiet"] for r in rounds) >= a.rounds:
                break
        print("\n".join(["", *table(rounds, ctx["flops"], ctx["threads"]), ""]))
        th = ctx["threads"][0]
        theirs = np.fromfile(ctx["tmp"] / f"llama-{th}.f32", np.float32)
        got = agreement(ctx["ours"][th], theirs.reshape(ctx["ours"][th].shape))
    ok = got["cosine"] >= TOLERANCE["cosine"] and got["relative"] <= TOLERANCE["relative"]
    print(
        f"embeddings ({ctx['ours'][th].shape[0]} tokens x {ctx['ours'][th].shape[1]}): "
        f"max |d| / max |value| {got['relative']:.2e} (bound {TOLERANCE['relative']}), cosine "
        f"{got['cosine']:.6f} (bound {TOLERANCE['cosine']}): {'agree' if ok else 'DISAGREE'}"
    )
    if a.json is not None:
        a.json.write_text(json.dumps({"rounds": rounds, "flops": ctx["flops"],
                                      "agreement": got, "tolerance": TOLERANCE}, indent=1,
                                     default=str))  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
