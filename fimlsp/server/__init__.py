"""The fimlsp language server (`fimlsp serve`): LSP over stdio or TCP with `pygls`.

Modules, one job each: `server` (pygls wiring), `completion` (requests, the worker thread, cancellation),
`cache` (the typing user's caches), `config` (settings), `documents` (open documents), `positions` (LSP
positions).
"""
