"""Weight matrices read in their VQF file encoding by the C kernels (spec/numerics.md §dot,
§quantized-matmul).

A `FastMatrix` is a [rows (out), cols (in)] matrix whose bytes stay in the memory-mapped payload
(spec/vqf.md §q8-0, §q4i8, §g256, §q8-tiled, §q4-0, §q4-8x8l: Q8_0, G256 and Q4I8 share the 34-byte
block, Q4_0 the 18-byte one, tiled layouts interleave G rows). Products follow the same rules as
`weightfile.ref.numerics.kernels`: quantized weights in the profile's spec/numerics.md
§q8-activation or §f32-weights mode, dense F32 / F16 weights with the spec/numerics.md §dot dot.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from weightfile.fast._native import NativeUnavailable, WfMatrix, address, library
from weightfile.ref.codecs.vqf.common import length_error, require_shape
from weightfile.ref.vqf.read import Entry, VQFFile
from weightfile.spec.codecs.vqf.registry import CODECS, codec_for, payload_size
from weightfile.spec.numerics.constants import QBLOCK
from weightfile.spec.numerics.profile import QuantizedMatmul
from weightfile.spec.vqf.qtypes import tensor_bytes

#: wf_kernels.h kinds by untiled base codec: G256 and Q4I8 are Q8_0 blocks on disk
#: (spec/vqf.md §q4i8, §g256); tests/fast/test_c_mirrors.py checks them against the WF_W_* enum.
KINDS = {"q8_0": 0, "g256": 0, "q4i8": 0, "q4_0": 1, "f32": 2, "f16": 3}
QUANTIZED = (0, 1)
#: The least work (weight elements x tokens) worth a thread of its own, the bound the C thread
#: policy (wf_threads_for) is given on every call; tests lower it so that tiny products use
#: threads. Any count gives the same bits (spec/numerics.md §threads), so this is only about speed.
MIN_ELEMENTS_PER_THREAD = 1 << 17


def kernels() -> ctypes.CDLL:
    """The C kernel library; the fast forward path has no NumPy fallback for its products."""
    lib = library()
    if lib is None:
        raise NativeUnavailable("the fast forward path needs the C kernels (see the warning)")
    return lib


def threads_for(asked: int, work: int) -> int:
    """`asked`, capped so that each thread has MIN_ELEMENTS_PER_THREAD of `work` (elements): the
    C kernels' policy (fast/csrc/wf_kernels.h wf_threads_for), asked rather than restated, since
    wf_forward_layers applies it to every product inside one C call."""
    return int(kernels().wf_threads_for(int(asked), int(work), MIN_ELEMENTS_PER_THREAD))


def quantize_activation(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """spec/numerics.md §q8-activation steps 1-2 for every row of X [T, n]: codes int8 [T, n],
    scales float32 [T, n/32]."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.shape[-1] % QBLOCK:
        raise ValueError(f"activation length {x.shape[-1]} is not a multiple of {QBLOCK}")
    codes = np.empty(x.shape, dtype=np.int8)
    scales = np.empty((*x.shape[:-1], x.shape[-1] // QBLOCK), dtype=np.float32)
    kernels().wf_quantize_activation(address(x), x.size, address(codes), address(scales))
    return codes, scales


@dataclass
class FastMatrix:
    """One matrix of a payload, read in place; `codec` is its registry layout name."""

    codec: str
    data: np.ndarray  # uint8 view of exactly this matrix's payload bytes (no copy)
    rows: int
    cols: int
    mode: QuantizedMatmul = QuantizedMatmul.Q8_ACTIVATION
    #: bytes from one row group to the next; 0 for a whole payload, more for a column band of a
    #: wider matrix read in place (`data` then runs from the band's first unit to its last)
    group_stride: int = 0
    _struct: WfMatrix = field(init=False, repr=False)
    _address: int = field(init=False, repr=False)
    quantized: bool = field(init=False)

    def __post_init__(self) -> None:
        c = CODECS[self.codec]
        kind = KINDS[c.base]
        if kind in QUANTIZED and self.cols % QBLOCK:
            raise ValueError(f"a quantized matrix needs cols % {QBLOCK} == 0, got {self.cols}")
        require_shape(self.codec, self.rows, self.cols)
        want = self._span()
        if (
            self.data.dtype != np.uint8
            or not self.data.flags.c_contiguous
            or self.data.size != want
        ):
            raise ValueError(
                f"{self.codec} [{self.rows}, {self.cols}] needs {want} contiguous bytes"
            )
        t = c.tiling
        self._struct = WfMatrix(
            self.data.ctypes.data,
            self.rows,
            self.cols,
            kind,
            t.group_rows if t else 1,
            t.chunk_bytes if t else 0,
            t.xor if t else 0,
            self.group_stride,
        )
        self._address = ctypes.addressof(self._struct)
        self.quantized = kind in QUANTIZED

    def _span(self) -> int:
        """Bytes from the first unit to the last: the payload size, or for a band read in place
        (spec/vqf.md §text-tensors) every row group but the last at `group_stride` apart."""
        size = payload_size(self.codec, self.rows, self.cols)
        if self.group_stride == 0:
            return size
        t = CODECS[self.codec].tiling
        groups = self.rows // (t.group_rows if t else 1)
        if self.group_stride < size // groups:
            raise ValueError(f"group stride {self.group_stride} < a row group's {size // groups}")
        return (groups - 1) * self.group_stride + size // groups

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def nbytes(self) -> int:
        """Bytes of file encoding one product reads (the whole payload of this matrix)."""
        return payload_size(self.codec, self.rows, self.cols)

    def matvec(self, x: np.ndarray, threads: int = 1) -> np.ndarray:
        """y = W x, float32 [rows], x float32 [cols]."""
        return self.matmat(np.asarray(x, dtype=np.float32).reshape(1, -1), threads)[0]

    def matmat(self, x: np.ndarray, threads: int = 1) -> np.ndarray:
        """Y = X W^T, float32 [T, rows], one row-product per token exactly as matvec gives it."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        self._check(x.shape)
        if self.quantized and self.mode is QuantizedMatmul.Q8_ACTIVATION:
            return self.matmat_codes(*quantize_activation(x), threads=threads)
        y = np.empty((x.shape[0], self.rows), dtype=np.float32)
        threads = self._threads(threads, x.shape[0])
        kernels().wf_matmat_f32(self._address, address(x), x.shape[0], address(y), threads)
        return y

    def matmat_codes(self, codes: np.ndarray, scales: np.ndarray, threads: int = 1) -> np.ndarray:
        """spec/numerics.md §q8-activation with activations already quantized by
        `quantize_activation` (shared by q/k/v)."""
        return matmat_codes_set((self,), codes, scales, threads)[0]

    def _threads(self, asked: int, tokens: int) -> int:
        return threads_for(asked, self.rows * self.cols * tokens)

    def _check(self, shape: tuple[int, ...]) -> None:
        if len(shape) != 2 or shape[1] != self.cols:
            raise ValueError(f"product of a {self.shape} matrix with activations {shape}")


def matmat_codes_set(
    mats: Sequence[FastMatrix], codes: np.ndarray, scales: np.ndarray, threads: int = 1
) -> list[np.ndarray]:
    """`[m.matmat_codes(codes, scales, threads) for m in mats]` as one C call: the pool splits
    the rows of all of them at once (q, k, v or gate, up share their activations), so a decode
    step starts the workers once per group. Each row is the same product, so the same bits."""
    for m in mats:
        if not (m.quantized and m.mode is QuantizedMatmul.Q8_ACTIVATION):
            raise ValueError(f"{m.codec} in mode {m.mode.value} takes float activations")
        m._check(codes.shape)
    codes = np.ascontiguousarray(codes, dtype=np.int8)
    scales = np.ascontiguousarray(scales, dtype=np.float32)
    tokens = codes.shape[0]
    if scales.shape != (tokens, codes.shape[1] // QBLOCK):
        raise ValueError(f"scales {scales.shape} do not fit codes {codes.shape}")
    ys = [np.empty((tokens, m.rows), dtype=np.float32) for m in mats]
    threads = threads_for(threads, sum(m.rows for m in mats) * codes.shape[1] * tokens)
    n = len(mats)  # the pointer arrays are named so that they live through the call
    mat_ptrs = (ctypes.c_void_p * n)(*(m._address for m in mats))
    y_ptrs = (ctypes.c_void_p * n)(*(address(y) for y in ys))
    kernels().wf_matmat_q8_activation_set(
        ctypes.addressof(mat_ptrs), n, address(codes), address(scales), tokens,
        ctypes.addressof(y_ptrs), threads,
    )  # fmt: skip
    return ys


def matrix_from_entry(
    vqf: VQFFile,
    entry_or_name: Entry | str,
    rows: int,
    cols: int,
    *,
    layer: int = 0,
    mode: QuantizedMatmul = QuantizedMatmul.Q8_ACTIVATION,
) -> FastMatrix:
    """Layer `layer` of a stacked [rows, cols] matrix entry: bytes [l·B, (l+1)·B)
    (spec/vqf.md §text-tensors).

    The layout is the one `codec_for` derives from the qtype, the header flags, the name and the
    shape (spec/vqf.md §qtype-codes); shape and length are checked with the codec's own rules before
    any byte is read.
    """
    if layer < 0:
        raise ValueError(f"layer must be >= 0, got {layer}")
    e = vqf.entry(entry_or_name) if isinstance(entry_or_name, str) else entry_or_name
    codec = codec_for(e.qtype, vqf.header.flags, e.name, shape=(rows, cols))
    require_shape(codec, rows, cols)
    step = tensor_bytes(e.qtype, rows * cols)
    payload = vqf.payload(e)[layer * step : (layer + 1) * step]
    err = length_error(codec, payload, rows, cols)
    if err is not None:
        raise err
    return FastMatrix(codec, np.frombuffer(payload, dtype=np.uint8), rows, cols, mode)


def takes_codes(mats: Sequence[FastMatrix]) -> bool:
    """True when every matrix reads spec/vqf.md §key-derivation quantized activations (so they can
    be made once)."""
    return all(m.quantized and m.mode is QuantizedMatmul.Q8_ACTIVATION for m in mats)


def project(mats: Sequence[FastMatrix], x: np.ndarray, threads: int) -> list[np.ndarray]:
    """Several matrices applied to the same activations; spec/vqf.md §key-derivation quantizes X
    once for all of them (the reference quantizes it per product, deterministically, so the codes
    are the same), and their products run as one C call."""
    if takes_codes(mats):
        return matmat_codes_set(mats, *quantize_activation(x), threads=threads)
    return [m.matmat(x, threads=threads) for m in mats]


def activation_buffers(x: np.ndarray, mats: Sequence[FastMatrix]) -> tuple[np.ndarray, ...]:
    """(out float32, codes int8, scales float32) for a fused C call whose output x-shaped rows
    feed `mats`; their shapes are checked first, so the call never writes past a buffer."""
    for m in mats:
        m._check(x.shape)  # quantized cols are a multiple of the spec/vqf.md §key-derivation block
    codes = np.empty(x.shape, dtype=np.int8)
    scales = np.empty((x.shape[0], x.shape[1] // QBLOCK), dtype=np.float32)
    return np.empty_like(x), codes, scales
