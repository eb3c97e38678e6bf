"""The store's exceptions (one module, so every store module can raise them)."""

from __future__ import annotations


class StoreError(ValueError):
    """A store is missing, corrupt, or used in a way it does not allow."""


class StoreLockedError(StoreError):
    """Another process is writing to the store."""


class StoreDamagedError(StoreError):
    """A chunk or item part of the store is missing or damaged.

    ``key`` names it relative to the store (``vectors/X/c/3/0``,
    ``items/part-00000002.parquet``); ``problem`` says what is wrong.
    """

    def __init__(self, path, key: str, problem: str):
        self.key, self.problem = key, problem
        super().__init__(f"{path}: {key} {problem} (the store is damaged; `hardneg store verify` lists all damage)")
