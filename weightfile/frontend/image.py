"""Image preprocessing for Qwen3-VL: a picture to `pixel_values` and its patch grid.

Two recipes (spec/models.md §qwen3-vl, "Image preprocessing" and "Where the board engine differs"):

* `hf` — the Hugging Face Qwen2-VL image processor with its PIL backend, which Qwen3-VL uses:
  `smart_resize` to multiples of patch·merge within the pixel limits, Pillow's bicubic resize of
  the 8-bit RGB image, `x/255` in binary64 rounded once to binary32, `(x − mean) / std` in binary32,
  the still frame repeated over the temporal patch, rows in 2×2 merge-window order. Every step is
  the processor's own arithmetic (the same Pillow call, the same NumPy dtypes), so the result is
  bit for bit the processor's.
* `board` — the Kestrel engine's: nearest-neighbour resize to multiples of the patch side, capped
  at the file's position-table size, and `p/127.5 − 1` in binary32.

It lives in `weightfile/frontend/` because it wraps Pillow rather than following a spec rule by
rule. Refusals are typed: `frontend.image.unreadable`, `frontend.image.aspect`,
`frontend.image.grid`, `frontend.image.size`.

An image file is untrusted input, so `load_image` opens only the formats in `FORMATS` (PNG, JPEG,
WebP, GIF, BMP: what a prompt image is in practice, each decoded by Pillow's own code, never by
an outside program — PostScript named `.png` is refused, not handed to Ghostscript), and refuses
a picture of more than `max_image_pixels` pixels from its header, before any pixel is decoded
(`frontend.image.size`; Pillow's own decompression-bomb error and warning are the same rule).
The default, `MAX_IMAGE_PIXELS` = 2 · 4096², is twice the most pixels the processor keeps
(`max_pixels`, 16,384 image tokens before merging): a larger picture is only downscaled, and
decoding it would cost 4 bytes a pixel for nothing the model sees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np

from weightfile.spec.errors import InvalidError, UnsupportedError

#: The ratio of the longer side to the shorter one the processor still takes.
MAX_ASPECT = 200

MODES = ("hf", "board")

#: The formats `load_image` opens (Pillow's format names; module docstring).
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")

#: The default pixel bound of an image file, checked from its header (module docstring).
MAX_IMAGE_PIXELS = 2 * 4096 * 4096


@dataclass(frozen=True)
class ImageSettings:
    """The processor's settings; the defaults are the released Qwen3-VL ones (spec/models.md
    §qwen3-vl)."""

    patch_size: int = 16
    merge_size: int = 2
    temporal_patch_size: int = 2
    min_pixels: int = 65536  # size.shortest_edge (256²)
    max_pixels: int = 16777216  # size.longest_edge (4096²)
    image_mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    image_std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    rescale_factor: float = 1 / 255
    #: board mode only: the most patches the engine takes (the file's vis_max_pos)
    max_patches: int = 2304
    #: the most pixels an image file may declare; larger is refused before decoding
    max_image_pixels: int = MAX_IMAGE_PIXELS

    @property
    def factor(self) -> int:
        return self.patch_size * self.merge_size


@dataclass(frozen=True)
class PreparedImage:
    """One image ready for the vision tower: rows in merge-window order and the grid (t, gh, gw)."""

    pixel_values: np.ndarray  # float32 [gh·gw, 3·T·P·P]
    grid_thw: tuple[int, int, int]
    merge_size: int = 2

    @property
    def n_tokens(self) -> int:
        """Image tokens in the prompt: one per 2×2 merge window (spec/models.md §qwen3-vl (c))."""
        t, gh, gw = self.grid_thw
        return t * gh * gw // (self.merge_size**2)

    @property
    def merged_grid(self) -> tuple[int, int]:
        """(h', w') = (gh, gw) / merge, the grid of image tokens."""
        return self.grid_thw[1] // self.merge_size, self.grid_thw[2] // self.merge_size


def smart_resize(
    height: int, width: int, factor: int = 32, min_pixels: int = 65536, max_pixels: int = 16777216
) -> tuple[int, int]:
    """spec/models.md §qwen3-vl `smart_resize`: sides snapped to multiples of `factor` within the
    pixel limits; `frontend.image.aspect` for a side ratio above 200."""
    if height < 1 or width < 1:
        raise InvalidError("frontend.image.aspect", f"an image of {width}x{height} pixels")
    if max(height, width) / min(height, width) > MAX_ASPECT:
        raise InvalidError(
            "frontend.image.aspect",
            f"{width}x{height}: sides differ by more than {MAX_ASPECT}:1, which the processor "
            "refuses",
        )
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def load_image(path: str | PathLike[str], max_image_pixels: int = MAX_IMAGE_PIXELS):
    """The picture at `path` as a Pillow image, decoded now; a typed error when it cannot be,
    and `frontend.image.size` from the header alone when it is too large (module docstring)."""
    import warnings

    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    if p.is_dir():
        raise InvalidError(
            "frontend.image.unreadable", f"{p}: is a directory, not an image file", path=str(p)
        )
    if not p.is_file():
        raise InvalidError("frontend.image.unreadable", f"{p}: no such image file", path=str(p))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(p, formats=FORMATS) as im:
                width, height = im.size
                if width * height > max_image_pixels:
                    raise InvalidError(
                        "frontend.image.size",
                        f"{p}: {width}x{height} is {width * height} pixels, more than the bound "
                        f"of {max_image_pixels} (--max-image-pixels)",
                        path=str(p),
                    )
                im.load()
                return im.copy()
    except InvalidError:  # ours (a ValueError), raised above
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise InvalidError(
            "frontend.image.size", f"{p}: a decompression bomb ({exc})", path=str(p)
        ) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        # SyntaxError: how several Pillow plugins report a malformed header
        raise InvalidError(
            "frontend.image.unreadable", f"{p}: not a readable image ({exc})", path=str(p)
        ) from None


def to_rgb(image) -> np.ndarray:
    """uint8 [H, W, 3]: transparency composited onto white, as the processor's convert_to_rgb."""
    from PIL import Image

    if isinstance(image, np.ndarray):
        arr = np.asarray(image)
        if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
            raise InvalidError(
                "frontend.image.unreadable",
                f"a pixel array must be uint8 [H, W, 3], got {arr.dtype} {list(arr.shape)}",
            )
        return arr
    has_alpha = "A" in image.getbands() or image.info.get("transparency") is not None
    if has_alpha:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return np.array(Image.alpha_composite(white, rgba).convert("RGB"))
    return np.array(image.convert("RGB"))


def patchify(chw: np.ndarray, s: ImageSettings) -> np.ndarray:
    """spec/models.md §qwen3-vl flattening: float32 [C, H, W] -> [gh·gw, C·T·P·P] in merge-window
    order, each row (C, T, Py, Px), the still frame repeated over T."""
    c, h, w = chw.shape
    p, m, t = s.patch_size, s.merge_size, s.temporal_patch_size
    gh, gw = h // p, w // p
    x = chw.reshape(c, gh // m, m, p, gw // m, m, p)
    x = x.transpose(1, 4, 2, 5, 0, 3, 6)  # (by, bx, my, mx, C, Py, Px)
    x = np.broadcast_to(x[:, :, :, :, :, None], (*x.shape[:5], t, p, p))
    return np.ascontiguousarray(x.reshape(gh * gw, c * t * p * p), dtype=np.float32)


def _check_grid(gh: int, gw: int, s: ImageSettings) -> None:
    if gh < s.merge_size or gw < s.merge_size or gh % s.merge_size or gw % s.merge_size:
        raise InvalidError(
            "frontend.image.grid",
            f"a {gh}x{gw} patch grid cannot be merged in {s.merge_size}x{s.merge_size} windows",
        )


def preprocess_hf(image, s: ImageSettings = ImageSettings()) -> PreparedImage:
    """The Hugging Face recipe (module docstring), bit for bit the PIL-backend processor's."""
    from PIL import Image

    rgb = to_rgb(image)
    h, w = rgb.shape[:2]
    rh, rw = smart_resize(h, w, s.factor, s.min_pixels, s.max_pixels)
    resized = np.array(Image.fromarray(rgb).resize((rw, rh), resample=Image.Resampling.BICUBIC))
    chw = np.moveaxis(resized, -1, 0)
    # x/255 in binary64, rounded once to binary32 (the processor upcasts before scaling)
    x = (chw.astype(np.float64) * s.rescale_factor).astype(np.float32)
    mean = np.array(s.image_mean, dtype=np.float32)
    std = np.array(s.image_std, dtype=np.float32)
    x = ((x.T - mean) / std).T
    gh, gw = rh // s.patch_size, rw // s.patch_size
    _check_grid(gh, gw, s)
    return PreparedImage(patchify(x, s), (1, gh, gw), s.merge_size)


def board_size(height: int, width: int, s: ImageSettings) -> tuple[int, int]:
    """spec/models.md §qwen3-vl (board): sides floored to multiples of the patch (at least one
    patch), then both scaled down by the same factor until the grid fits in `max_patches`."""
    gh, gw = max(1, height // s.patch_size), max(1, width // s.patch_size)
    if gh * gw > s.max_patches:
        scale = math.sqrt(s.max_patches / (gh * gw))
        gh, gw = max(1, math.floor(gh * scale)), max(1, math.floor(gw * scale))
        while gh * gw > s.max_patches:  # sqrt rounding can leave one row too many
            gh, gw = (gh - 1, gw) if gh >= gw else (gh, gw - 1)
    return gh * s.patch_size, gw * s.patch_size


def preprocess_board(image, s: ImageSettings = ImageSettings()) -> PreparedImage:
    """The board's recipe: nearest-neighbour source pixel `floor(i·H/H')`, then `p/127.5 − 1` in
    binary32. A grid with an odd side is refused (`frontend.image.grid`) rather than cropped."""
    rgb = to_rgb(image)
    h, w = rgb.shape[:2]
    rh, rw = board_size(h, w, s)
    rows = (np.arange(rh) * h) // rh
    cols = (np.arange(rw) * w) // rw
    chw = np.moveaxis(rgb[rows][:, cols], -1, 0).astype(np.float32)
    x = chw / np.float32(127.5) - np.float32(1)
    gh, gw = rh // s.patch_size, rw // s.patch_size
    _check_grid(gh, gw, s)
    return PreparedImage(patchify(x, s), (1, gh, gw), s.merge_size)


def preprocess(image, s: ImageSettings = ImageSettings(), mode: str = "hf") -> PreparedImage:
    """`image` (a path, a Pillow image or uint8 [H, W, 3]) prepared by recipe `mode`."""
    if mode not in MODES:
        raise UnsupportedError("frontend.image.mode", f"unknown image preprocessing {mode!r}")
    if isinstance(image, (str, PathLike)):
        image = load_image(image, s.max_image_pixels)
    return preprocess_hf(image, s) if mode == "hf" else preprocess_board(image, s)


# --- the multimodal prompt of `run` / `trace` (spec/models.md §qwen3-vl (c)) ----------------------

#: In --prompt text, where the next image goes.
IMAGE_MARKER = "<image>"


def settings_for(arch: dict, base: ImageSettings = ImageSettings()) -> ImageSettings:
    """The processor settings with the file's vision geometry (spec/vqf.md §arch-semantics vis_*
    fields)."""
    from dataclasses import replace

    # a .ninfer file's own processor values (weightfile/frontend/resources.processor_settings)
    own = {k: arch[k] for k in ("image_mean", "image_std", "rescale_factor") if k in arch}
    return replace(
        base,
        patch_size=int(arch["vis_patch"]),
        merge_size=int(arch["vis_merge"]),
        temporal_patch_size=int(arch["vis_temporal"]),
        max_patches=int(arch["vis_max_pos"]),
        **own,
    )


def text_with_images(pieces: list[list[int]], arch: dict) -> list[int]:
    """Text pieces joined by <vision_start> <image_pad> <vision_end>, one image between each two."""
    block = [int(arch["vision_start_id"]), int(arch["image_token_id"]), int(arch["vision_end_id"])]
    out = list(pieces[0])
    for p in pieces[1:]:
        out += block + list(p)
    return out


def image_prompt_ids(
    s,
    prompt: str | None,
    token_ids: str | None,
    chat: bool,
    images: list[str | PathLike[str]],
    mode: str = "hf",
    pixels: tuple[int, int] = (65536, 16777216),
    max_image_pixels: int = MAX_IMAGE_PIXELS,
) -> list[int]:
    """The prompt ids of `run`/`trace` with `--image`, each image's placeholder expanded to its
    token count as the Hugging Face processor does, and the prepared images attached to the
    session's model for its first forward call.

    `--prompt`: each `<image>` marks where the next image goes; without any, the images come
    first. `--token-ids`: each `image_token_id` stands for the next image. More or fewer places
    than images is `frontend.image.count`; a model without a vision tower refuses images too."""
    from weightfile.ref.qwen3_vl.model import expand_image_tokens
    from weightfile.ref.qwen3_vl.vision import VisionInput

    from .session import chat_prompt, parse_token_ids, prompt_ids

    takes = hasattr(s.model, "attach_images") or hasattr(s.model, "attach_board_images")
    if not takes or not s.arch.get("vis_depth"):
        raise InvalidError("frontend.image.count", f"{s.path.name} has no vision tower")
    base = ImageSettings(
        min_pixels=pixels[0], max_pixels=pixels[1], max_image_pixels=max_image_pixels
    )
    settings = settings_for(s.arch, base)
    if hasattr(s.model, "attach_board_images"):
        counts = attach_board_images(s.model, images, settings, mode)
    else:
        prepared = [preprocess(p, settings, mode) for p in images]
        counts = [p.n_tokens for p in prepared]
        s.model.attach_images([VisionInput(p.pixel_values, p.grid_thw) for p in prepared])
    vocab = s.model.config.vocab_size
    if token_ids is not None:
        ids = parse_token_ids(token_ids, vocab)
    else:
        text = chat_prompt(s, prompt) if chat else prompt
        if chat:  # the stop ids the text path adds
            prompt_ids(s, prompt, None, chat=True)
        parts = text.split(IMAGE_MARKER)
        if len(parts) == 1:
            parts = [""] * len(counts) + parts
        pieces = [s.tokenizer.encode(p).ids if p else [] for p in parts]
        ids = text_with_images(pieces, s.arch)
        if max(ids) >= vocab:
            raise InvalidError("frontend.prompt", f"ids reach {max(ids)}, model vocab is {vocab}")
    return expand_image_tokens(ids, int(s.arch["image_token_id"]), counts)


def attach_board_images(model, images: list, s: ImageSettings, mode: str) -> list[int]:
    """The kestrel-board profile's images (spec/numerics.md §board-vision-preprocess): each
    prepared by the engine's own recipe into its pixel buffer and attached to the board model;
    the image-token count of each, (gh // 2)·(gw // 2) (an odd grid's last row or column is in
    no token). Another recipe is `frontend.image.mode`: the board takes only its own."""
    from weightfile.ref.qwen3_vl.board.preprocess import board_pixels

    if mode != "board":
        raise UnsupportedError(
            "frontend.image.mode",
            "the kestrel-board profile prepares images by the engine's recipe: "
            "--image-preprocess board",
            path="--image-preprocess",
        )
    m = s.merge_size
    pixels = [board_pixels(to_rgb(load_image(p, s.max_image_pixels)), s.patch_size, s.max_patches)
              for p in images]  # fmt: skip
    model.attach_board_images(pixels)
    return [(p.shape[0] // s.patch_size // m) * (p.shape[1] // s.patch_size // m) for p in pixels]
