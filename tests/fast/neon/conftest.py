"""One cross-built driver for every NEON test of this folder (tests/emulated)."""

from pathlib import Path

import pytest
from emulated import QemuDriver, build_driver


@pytest.fixture(scope="session")
def driver(tmp_path_factory: pytest.TempPathFactory) -> QemuDriver:
    return build_driver(Path(__file__).with_name("driver.c"), tmp_path_factory.mktemp("neon"))
