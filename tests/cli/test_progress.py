"""The checksum progress bar: drawn on a terminal, silent otherwise."""

from weightfile.progress import ProgressBar


def test_progress_bar_reaches_100_percent(capsys):
    bar = ProgressBar(1000, "fnv1a64", enabled=True)
    for _ in range(10):
        bar(100)
    bar.close()
    err = capsys.readouterr().err
    assert err.startswith("\rfnv1a64 [") and "100.0%" in err and err.endswith("\n")


def test_progress_bar_is_silent_when_disabled(capsys):
    bar = ProgressBar(10, "x", enabled=False)
    bar(10)
    bar.close()
    assert capsys.readouterr().err == ""
