"""The training layer: the one Trainer and what it stands on.

``trainer`` (steps or epochs, accumulation, clipping, autocast, evaluation, DDP), ``optim`` (optimiser and
learning-rate schedule), ``checkpoint`` (safetensors + JSON, two-phase commit), ``rundir`` (a run directory's
files, lock and readers' choice of checkpoint), ``devices`` (device, precision and compile choices, DDP set-up)
and ``callbacks`` (the user's hooks). It knows no task: the tasks layer above hands it a model, data and a loss.
The layer table: docs/architecture.md.
"""
