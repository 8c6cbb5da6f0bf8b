"""fimlsp: grammar-constrained fill-in-the-middle completion for Python."""

from fimlsp.python.quotient import FimState, quotient

__version__ = "0.1.0"
__all__ = ["FimState", "quotient"]
