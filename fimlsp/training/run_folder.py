"""A run folder: the names of what a run keeps in it, and the run itself (its options, how it runs, the model it
continues) with the seeds of its random choices about data.

Everything a run produces lives under its output folder, so a run that is interrupted (Ctrl-C, a killed job, or
`--stop-after`) and started again with the same options continues from its last checkpoint and ends with the
same weights as a run that never stopped: the corpus manifest and tokenizer are reused, the packed data of each
epoch is a pure function of the seed, and the batch of step s depends only on s.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from fimlsp.model.folder import CORPUS_MANIFEST, WEIGHTS, WEIGHTS_INDEX, weight_files
from fimlsp.training.options import RunControl, TrainingError, TrainOptions

MANIFEST = CORPUS_MANIFEST  # the same file in a run folder as in the model folders it exports
RUN_OPTIONS = "run.json"
TOKENIZER_DIR = "tokenizer"
DATA_DIR = "data"
CHECKPOINT_DIR = "checkpoints"
LOG = "log.jsonl"
EVALUATION_RECORDS = "evaluation.jsonl"
INIT_MODEL_DIR = "init-model"  # the model a continued run started from, copied so that resuming needs nothing else


@dataclasses.dataclass(frozen=True)
class Run:
    """One output folder and the options it trains to. Picklable: the data builders' processes get it whole."""

    options: TrainOptions
    control: RunControl
    init_weights: str | None = None  # the digest of the weights a continued run (`--init-from`) starts from

    @classmethod
    def of(cls, options: TrainOptions, control: RunControl) -> Run:
        return cls(options, control, weights_digest(control.init_from) if control.init_from else None)

    @property
    def output(self) -> Path:
        return self.control.output

    @property
    def init_model(self) -> Path | None:
        return self.output / INIT_MODEL_DIR if self.init_weights else None

    def data_seed(self, *parts) -> str:
        """The seed of a random choice about the data: a continued run draws other spans and orders than the run
        that made its starting model did."""
        return ":".join(map(str, (self.options.seed, *((self.init_weights,) if self.init_weights else ()), *parts)))

    def window_seed(self, epoch: int) -> list[int]:
        """The seed of the order in which an epoch's windows are drawn."""
        return [self.options.seed, epoch, *([int(self.init_weights, 16)] if self.init_weights else [])]


def weights_digest(model: Path) -> str:
    """A short content hash of a model folder's weights: which model a continued run started from."""
    files = weight_files(model)
    if not files:
        raise TrainingError(f"--init-from {model}: it has neither {WEIGHTS} nor a readable {WEIGHTS_INDEX}")
    digest = hashlib.sha256()
    try:
        for path in files:
            digest.update(path.read_bytes())
    except OSError as error:
        raise TrainingError(f"--init-from {model}: cannot read its {error.filename} ({error.strerror})") from None
    return digest.hexdigest()[:16]
