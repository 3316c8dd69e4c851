"""Many processes writing one catalog at once, on SQLite and on Postgres: each name won once."""

from __future__ import annotations

import multiprocessing
import os
import queue
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lake_assets.core.catalog import Catalog
from lake_assets.core.errors import LakeError
from lake_assets.tables.entry import TableEntry
from tests.core.catalog_helpers import entry

# Many processes: each worker is a fresh interpreter, started once for the whole module.
# "spawn" is what Dagster's multiprocess executor uses; each spawned interpreter imports
# dagster (through lake_assets.core.catalog), about 1.5 s of CPU. "forkserver" (with the preload
# below) shares one such import and starts the four workers in about a quarter of the time.
START_METHOD = "spawn"
WORKERS = 4
TABLES_PER_WORKER = 25


def _serve(inbox: Any, outbox: Any) -> None:
    outbox.put(("ready", None))
    for function, args in iter(inbox.get, None):
        try:
            outbox.put(("ok", function(*args)))
        except BaseException:
            outbox.put(("failed", traceback.format_exc()))
    # Every result has been received; skip the slow teardown of the imported modules.
    os._exit(0)


class Workers:
    """Processes that each run the task they are given; task i goes to process i."""

    def __init__(self, count: int) -> None:
        context = multiprocessing.get_context(START_METHOD)
        if START_METHOD == "forkserver":
            context.set_forkserver_preload([__name__])
        self.inboxes = [context.Queue() for _ in range(count)]
        self.outboxes = [context.Queue() for _ in range(count)]
        self.processes = [
            context.Process(target=_serve, args=(inbox, outbox), daemon=True)
            for inbox, outbox in zip(self.inboxes, self.outboxes, strict=True)
        ]
        for process in self.processes:
            process.start()
        for worker in range(count):
            self._receive(worker)

    def _receive(self, worker: int) -> Any:
        try:
            status, value = self.outboxes[worker].get(timeout=60)
        except queue.Empty:
            pytest.fail(f"worker process {worker} did not answer within 60 s")
        if status == "failed":
            pytest.fail(f"worker process {worker} failed:\n{value}")
        return value

    def run(self, tasks: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> list[Any]:
        """Hand every task to its own process at once; their results, in task order."""
        assert len(tasks) <= len(self.processes)
        for inbox, task in zip(self.inboxes, tasks, strict=False):
            inbox.put(task)
        return [self._receive(worker) for worker in range(len(tasks))]

    def stop(self) -> None:
        for inbox in self.inboxes:
            inbox.put(None)
        for process in self.processes:
            process.join(timeout=10)


@pytest.fixture(scope="module")
def workers() -> Iterator[Workers]:
    pool = Workers(WORKERS)
    yield pool
    pool.stop()


def _add_tables_and_record_state(location: str, worker: int, versions: list[int]) -> list[str]:
    """Add this worker's tables, recording a commit of table `shared` after each one."""
    catalog = Catalog(location)
    errors = []
    for number, version in enumerate(versions):
        try:
            catalog.add(entry(f"w{worker}_t{number:02d}"))
        except LakeError as error:
            errors.append(error.what)
        catalog.record_table_state(catalog.get(TableEntry, "shared"), version, version * 10)
    return errors


def _add_tables(location: str, names: list[str]) -> tuple[list[str], list[str]]:
    """Try to add every name; the names this process won, and the errors of those it lost."""
    catalog = Catalog(location)
    won, errors = [], []
    for name in names:
        try:
            catalog.add(entry(name))
            won.append(name)
        except LakeError as error:
            errors.append(error.what)
    return won, errors


def test_processes_adding_tables_and_recording_state_at_once(workers, location):
    Catalog(location).add(entry("shared"))
    # Versions 0..99 spread over the workers; half of them send theirs newest first.
    versions = [list(range(w, WORKERS * TABLES_PER_WORKER, WORKERS)) for w in range(WORKERS)]
    for w in (0, 2):
        versions[w].reverse()

    errors = workers.run(
        [(_add_tables_and_record_state, (location, w, versions[w])) for w in range(WORKERS)]
    )

    assert errors == [[]] * WORKERS
    tables = Catalog(location).entries(TableEntry)
    expected = {f"w{w}_t{n:02d}" for w in range(WORKERS) for n in range(TABLES_PER_WORKER)}
    assert len(tables) == WORKERS * TABLES_PER_WORKER + 1
    assert {table.name for table in tables} == expected | {"shared"}
    shared = Catalog(location).get(TableEntry, "shared")
    assert (shared.version, shared.row_count) == (99, 990)


def test_processes_racing_to_add_the_same_names_each_name_won_once(workers, location):
    Catalog(location)
    names = [f"same_{number:02d}" for number in range(40)]

    (won_a, errors_a), (won_b, errors_b) = workers.run(
        [(_add_tables, (location, names)), (_add_tables, (location, names))]
    )

    assert sorted(won_a + won_b) == names
    assert len(errors_a) + len(errors_b) == len(names)
    assert sorted(errors_a + errors_b) == sorted(
        f"table {name} already exists" for name in won_a + won_b
    )
    assert [table.name for table in Catalog(location).entries(TableEntry)] == names


def test_processes_racing_to_add_one_name_exactly_one_succeeds(workers, location):
    Catalog(location)

    results = workers.run([(_add_tables, (location, ["sales"]))] * WORKERS)

    winners = [won for won, _ in results if won]
    errors = [error for _, lost in results for error in lost]
    assert winners == [["sales"]]
    assert errors == ["table sales already exists"] * (WORKERS - 1)


def test_processes_opening_a_new_catalog_at_once(workers, location):
    results = workers.run([(_add_tables, (location, [f"t{w}"])) for w in range(WORKERS)])

    assert results == [([f"t{w}"], []) for w in range(WORKERS)]
    assert [table.name for table in Catalog(location).entries(TableEntry)] == [
        f"t{w}" for w in range(WORKERS)
    ]
