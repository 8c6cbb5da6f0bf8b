"""fimlsp: grammar-constrained fill-in-the-middle completion for Python."""

__version__ = "0.1.0"
__all__ = ["FimState", "quotient"]


def __getattr__(name: str):
    """`fimlsp.quotient` and `fimlsp.FimState`, Python's recognizer, loaded on first use: importing the package
    does not load a language."""
    if name in __all__:
        from fimlsp.python import quotient

        return getattr(quotient, name)
    raise AttributeError(f"module 'fimlsp' has no attribute {name!r}")
