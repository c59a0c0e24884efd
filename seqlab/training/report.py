"""Training logs beside ``metrics.jsonl`` for the tools users already read curves in: ``train.report_to``
(Hugging Face's name and values), today ``"tensorboard"``.

:class:`TensorBoard` writes event files under ``RUN/tensorboard/``: every number of every ``metrics.jsonl`` row as
a scalar named ``split/key`` (``train/loss``, ``train/lr``, ``train/grad_norm``, ``train/tokens_per_s``,
``valid/loss``, ``valid/f1``, ...) at the row's step, and a language model's sample as text (``valid/sample``) at
each evaluation. A resumed run purges the events after its checkpoint's step (TensorBoard's ``purge_step``), as
``metrics.jsonl`` drops its rows after it, so no step is written twice. Only the main process reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from seqlab.base.errors import SeqlabError

if TYPE_CHECKING:  # annotations only: the reporters run without torch (word2vec and GloVe)
    import torch

REPORTERS = ("tensorboard",)  # what train.report_to may name


class Reporter(Protocol):
    def write(self, row: dict[str, Any]) -> None: ...

    def text(self, tag: str, text: str, step: int) -> None: ...

    def close(self) -> None: ...


class TensorBoard:
    """Event files under ``run_dir/tensorboard`` (module docstring); ``step`` > 0: a resume from that step."""

    def __init__(self, run_dir: Path, step: int):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise SeqlabError('train.report_to = ["tensorboard"] needs the tensorboard package: '
                              "pip install 'seqlab[tensorboard]'") from None
        self.writer = SummaryWriter(log_dir=str(run_dir / "tensorboard"), purge_step=step + 1 if step else None)

    def write(self, row: dict[str, Any]) -> None:
        step, split = int(row["step"]), row.get("split", "train")
        for key, value in row.items():
            if key not in ("step", "split", "epoch") and isinstance(value, (int, float)) \
                    and not isinstance(value, bool):
                self.writer.add_scalar(f"{split}/{key}", value, step)

    def text(self, tag: str, text: str, step: int) -> None:
        self.writer.add_text(tag, text, step)

    def close(self) -> None:
        self.writer.close()


def reporters(report_to: tuple[str, ...], run_dir: Path, step: int) -> list[Reporter]:
    """The reporters ``train.report_to`` names (validated by TrainConfig), started at ``step``."""
    return [TensorBoard(run_dir, step) for name in report_to if name == "tensorboard"]


def report_sample(sinks: list[Reporter], task: Any, model: torch.nn.Module, device: torch.device, step: int) -> None:
    """A language model's sample (its task's ``sample``, in eval mode) as text to each reporter."""
    import torch

    if not sinks or not hasattr(task, "sample"):
        return
    with torch.no_grad():
        model.eval()
        try:
            text = task.sample(model, device)
        finally:
            model.train()
    for sink in sinks:
        sink.text("valid/sample", text, step)
