"""Hypothesis profiles: `dev` (default, quick), `ci` (derandomised, fixed budget), `nightly` (long).

CI selects `ci` through the CI environment variable; pick one by hand with
`pytest --hypothesis-profile=nightly`.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "nightly",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# -- the `quick` selection (pytest -m quick, README "Set up"): a representative subset, < 1 min --
#: Files (relative to tests/) whose every test is quick: one per layer (schemas, a ref codec's
#: worked vectors, the checksum, the example, the API, the detokenizer, layering).
QUICK_FILES = (
    "spec/vqf/test_schemas.py",
    "ref/codecs/vqf/test_worked_vectors.py",
    "ref/vqf/test_fnv1a64.py",
    "test_example.py",
    "test_layering.py",
    "api/test_api.py",
    "api/test_stream.py",
)


#: Files holding single tests marked `@pytest.mark.quick` by hand.
QUICK_MARKED = ("cli/test_surface.py",)


def pytest_ignore_collect(collection_path, config):
    """`pytest -m quick` imports only the files that hold quick tests: collecting all 2,400
    tests cost more than running the quick ones (77 s against 12 s on a loaded 2-core VM)."""
    if config.getoption("markexpr") != "quick" or collection_path.suffix != ".py":
        return None
    name = collection_path.name
    if not (name.startswith("test_") or name == "conftest.py"):
        return None
    rel = os.path.relpath(str(collection_path), os.path.dirname(__file__)).replace(os.sep, "/")
    return None if rel in QUICK_FILES + QUICK_MARKED or name == "conftest.py" else True


def pytest_collection_modifyitems(config, items):
    import pytest

    root = os.path.dirname(__file__)
    for item in items:
        rel = os.path.relpath(str(item.path), root).replace(os.sep, "/")
        if rel in QUICK_FILES:
            item.add_marker(pytest.mark.quick)
