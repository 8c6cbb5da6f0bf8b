"""The Python language layer: the Python 3.11 grammar and its terminals."""
