"""Evaluation of constrained FIM decoding on a corpus: the paper's Tables I-II and Fig. 11 (`fimlsp eval`), and
the constraint's cost alone, without a model (`fimlsp bench`).

- `dataset`: finding and filtering files, building random-span and boundary cases, case files (JSON lines).
- `runner`: running each case in each decoding mode, writing results as JSON lines, resuming, worker processes.
- `report`: contingency tables, validity rates, fitted lines and the timing figure.
- `bench`: one-time setup and per-token `feed` cost of the constraint next to `ast.parse` of the same file.
"""
