"""What the tests and the benchmarks both drive fimlsp with and check it against: a JSON-RPC client of `fimlsp
serve`, llama.cpp servers on 127.0.0.1, a tiny randomly initialised model, CPython's tokenizer as the grammar's
reference, the standard library as a corpus and the measures taken on it.

Neither product nor test: the package does not ship it (setuptools takes `fimlsp*` and `earley*`), tests and
benchmarks import it, and it imports neither of them.
"""
