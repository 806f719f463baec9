"""Your own torch.nn.Module, as a run trained it: model.module / network.module name a class in
a Python file ("path/to/file.py:ClassName"). Training builds it with this file's build() (the
host's embedded Python runs this very file), and load_run imports the file and builds the class
the same way, with the keyword arguments the run built it with: you get your own class back.
"""
import importlib.util
import os
import sys

import torch


def _load_file(path):
    """The file as a module of its own; its folder first on sys.path, so its neighbours import."""
    name = "mlhost_user_" + os.path.splitext(os.path.basename(path))[0]
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == path:
        return loaded
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        del sys.modules[name]
        raise
    return loaded


def build(module, kwargs):
    """An instance of the class `module` ("path/to/file.py:ClassName") names, built with `kwargs`."""
    path, _, class_name = module.rpartition(":")
    if not path or not class_name:
        raise ValueError(f"{module!r}: want path/to/file.py:ClassName")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: the module's file is not there (moved since training?)")
    loaded = _load_file(path)
    cls = getattr(loaded, class_name, None)
    if cls is None:
        found = sorted(n for n, v in vars(loaded).items()
                       if isinstance(v, type) and issubclass(v, torch.nn.Module) and v.__module__ == loaded.__name__)
        raise LookupError(f"{os.path.basename(path)} has no class {class_name}"
                          f" (its torch.nn.Module classes: {', '.join(found) or 'none'})")
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise TypeError(f"{class_name} is not a torch.nn.Module subclass")
    built = cls(**kwargs)
    if not isinstance(built, torch.nn.Module):
        raise TypeError(f"{class_name}(...) did not build a torch.nn.Module")
    return built
