"""Training pipeline for fimlsp's own small fill-in-the-middle model.

One module per job: `corpus` finds and splits the Python files, `tokenizer` trains the byte-level BPE, `fim`
turns documents into FIM training samples and packs them, `train` runs the optimisation and exports the model,
`evaluate` measures it, and `card` writes the model card. `fimlsp train` (fimlsp/commands/train.py) ties them
together.
"""
