"""Fault injection for the executors' tests and drills (never used by the pipeline itself).

Module-level so that both a forked pool and Ray workers can import them by name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def square(item: int) -> int:
    """A trivial task: ``item ** 2``."""
    return item * item


def poison(item: Any) -> Any:
    """Kill the worker process on an item marked ``"POISON"``; pass others through."""
    if item == "POISON" or (isinstance(item, tuple | list) and "POISON" in str(item[0])):
        os._exit(3)
    return item


def die_once(flag: str, item: Any) -> Any:
    """Kill the worker the first time any worker reaches ``item == 7`` while ``flag`` exists.

    The flag file is removed before dying (``unlink`` is atomic: exactly one worker dies),
    so the retry of the batch succeeds: a worker killed mid-task.
    """
    if item == 7:
        try:
            Path(flag).unlink()
        except FileNotFoundError:
            return item * item
        os._exit(9)
    return item * item


def raise_on(item: Any) -> Any:
    """Raise ValueError on negative numbers (a deterministic Python failure)."""
    if item < 0:
        raise ValueError(f"negative input {item}")
    return item * item
