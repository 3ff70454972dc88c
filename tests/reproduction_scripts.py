"""Import a reproduction script (``reproductions/<name>.py``) as a module, for its short tests."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1] / "reproductions"


def load_reproduction(name: str) -> ModuleType:
    """``reproductions/<name>.py`` as the module ``name`` (registered in ``sys.modules``, where
    dataclasses and pickling look their module up)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / f"{name}.py")
    assert spec is not None and spec.loader is not None, name
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
