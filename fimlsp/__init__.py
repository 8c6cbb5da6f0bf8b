"""fimlsp: grammar-constrained fill-in-the-middle completion for Python."""

__version__ = "0.1.0"
