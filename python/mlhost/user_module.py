"""Your own torch.nn.Module, as a run trained it: model.module / network.module name a class in
a Python file ("path/to/file.py:ClassName"); load_run imports that file and builds the class
with the keyword arguments the run built it with, so you get your own class back.
"""
import importlib.util
import os
import sys


def build(module, kwargs):
    """An instance of the class `module` ("path/to/file.py:ClassName") names, built with
    `kwargs`. The file's folder goes first on sys.path (its neighbours import), as in training."""
    path, _, class_name = module.rpartition(":")
    if not path or not class_name:
        raise ValueError(f"{module!r}: want path/to/file.py:ClassName")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: the run's module file is not there (moved since training?)")
    name = "mlhost_user_" + os.path.splitext(os.path.basename(path))[0]
    loaded = sys.modules.get(name)
    if loaded is None or getattr(loaded, "__file__", None) != path:
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(name, path)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
    cls = getattr(loaded, class_name, None)
    if cls is None:
        raise LookupError(f"{path} has no class {class_name}")
    return cls(**kwargs)
