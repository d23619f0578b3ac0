"""The bandwidth probe reads every word (checked by its sum) and reports which probe ran."""

import numpy as np
import pytest

import weightfile.bench.bandwidth as bandwidth
from weightfile.fast._native import library


def test_c_probe_reads_every_word():
    lib = library()
    if lib is None:
        pytest.skip("no C compiler here")
    for n in (0, 1, 7, 8, 9, 1000, 4097):
        words = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        want = int(sum(int(w) for w in words) % (1 << 64))  # wrapping sum, by Python integers
        assert lib.wf_membw_read(words.ctypes.data, n) == want


def test_numpy_fallback_reads_every_word(monkeypatch):
    monkeypatch.setattr(bandwidth, "library", lambda: None)
    read, method = bandwidth.reader()
    assert method == "numpy"
    words = np.array([1, 2, 4, 8], dtype=np.uint64)
    assert read(words) == 15


@pytest.mark.parametrize("native", [True, False])
def test_measure_reports_positive_rates(monkeypatch, native):
    if not native:
        monkeypatch.setattr(bandwidth, "library", lambda: None)
    bw = bandwidth.measure_bandwidth(4 << 20, threads=2, repeats=1)
    assert bw.single_core > 0 and bw.all_core > 0
    assert bw.threads == 2 and bw.buffer_bytes == 4 << 20
    assert bw.method == ("c" if native and library() is not None else "numpy")
