"""Training pipeline for fimlsp's own small fill-in-the-middle model.

One module per job: `corpus` finds and splits the Python files, `tokenizer` trains the byte-level BPE, `fim` turns
documents into FIM training samples and packs them; a run (`options`, its folder `run_folder`) is prepared
(`prepare`: options, corpus manifest, tokenizer), gets its data epoch by epoch (`epochs`), is optimised (`loop`,
resumable through `checkpoints`) and exported as a model folder (`export`); `evaluate` measures the model and `card`
writes its card, with the commands that rebuild it (`lineage`). `pipeline` runs these in turn, and the shipped
model's `recipe` stage by stage; `fimlsp train` (fimlsp/commands/train.py) calls it.
"""
