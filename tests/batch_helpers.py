"""Task functions for the batch tests that must be importable by spawned worker processes."""

from __future__ import annotations

import os
from pathlib import Path

from segapp.batch.task import Task, segment_pair


def die_once_on_first(task: Task) -> dict:
    """Kill this worker process the first time it sees an image named ``*first*``."""
    marker = Path(task.output).with_suffix(".died")
    if "first" in Path(task.image).name and not marker.exists():
        marker.write_text("died")
        os._exit(1)  # a crash, as the OOM killer would do it: no exception, no cleanup
    return segment_pair(task)


def always_die_on_poison(task: Task) -> dict:
    """Kill the worker on every attempt at an image named ``*poison*``."""
    if "poison" in Path(task.image).name:
        os._exit(1)
    return segment_pair(task)
