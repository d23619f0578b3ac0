"""Naming the machine from /proc/cpuinfo text."""

from weightfile.bench.machine import cpu_model, describe_machine

RK3588 = "".join(
    f"processor\t: {i}\nBogoMIPS\t: 48.00\nCPU implementer\t: 0x41\nCPU part\t: {part}\n\n"
    for i, part in enumerate(["0xd05"] * 4 + ["0xd0b"] * 4)
)


def test_big_little_board_is_named_by_its_cores():
    assert cpu_model(RK3588) == "4× Cortex-A55 + 4× Cortex-A76"


def test_x86_model_name_wins_and_unknown_parts_are_kept():
    text = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\n\n" * 2
    assert cpu_model(text) == "AMD EPYC 7B13"
    assert cpu_model("CPU part\t: 0xabc\n") == "1× part 0xabc"
    assert cpu_model("Hardware\t: BCM2835\n") == "BCM2835"
    assert cpu_model("") is None


def test_this_machine_has_a_name():
    line = describe_machine()
    assert "cpus" in line and "Python" in line
