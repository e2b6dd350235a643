"""Algorithms written as tux2 programs (schema + UDFs + stage sequence)."""

_MODULES = ("als", "blockpg", "glm", "lda", "mf")


def __getattr__(name):
    """``tux2.udfs.mf`` after ``import tux2``: the module, imported now (the package once
    came fully imported with ``import tux2``)."""
    if name in _MODULES:
        import importlib
        return importlib.import_module(f"tux2.udfs.{name}")
    raise AttributeError(f"module 'tux2.udfs' has no attribute {name!r}")
