"""Map the architecture's top-level folders onto the one import name `weightfile`.

`spec/`, `ref/`, `fast/` and `conformance/` stay top-level folders so the layout shows the
architecture, but they import as `weightfile.spec`, `weightfile.ref`, ... so that no generic
top-level module called `spec` is ever installed. Subpackages are discovered, never listed by hand.
"""

import os

from setuptools import setup

PACKAGE_ROOTS = {
    "weightfile": "weightfile",
    "weightfile.spec": "spec",
    "weightfile.ref": "ref",
    "weightfile.fast": "fast",
    "weightfile.conformance": "conformance",
}


def discover_packages() -> list[str]:
    found = []
    for name, folder in PACKAGE_ROOTS.items():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            if "__init__.py" in filenames:
                rel = os.path.relpath(dirpath, folder)
                found.append(name if rel == "." else name + "." + rel.replace(os.sep, "."))
    return found


setup(packages=discover_packages(), package_dir=PACKAGE_ROOTS)
