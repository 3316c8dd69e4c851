"""Spark jobs and time per statement on a small table, for a baseline and a candidate set of
settings, each in its own driver process.

    .venv/bin/python -u bench/statement_jobs.py --rounds 5 -v

Each process starts a driver on a fresh temporary lake home and runs a round of statements
through our SQL (CREATE TABLE, INSERT, UPDATE, DELETE, MERGE, SELECT, CREATE DYNAMIC TABLE,
INSERT, REFRESH) on a table of a few rows, once to warm up and then --rounds times, each
statement in a Spark job group of its own. It prints per statement the median number of Spark
jobs and the median milliseconds, for the baseline and the candidate, and the candidate's ratio;
with -v also what each job was (its description, else its call site), from the last round.
The baseline runs with the test suite's settings (tests/conftest.py's LAKE_SPARK_CONF and
LAKE_JVM_OPTIONS), or with --defaults the product's own; the candidate adds --conf entries and
--jvm-options to them. --host-zone starts both drivers with that default time zone (as a host set
to it would). The candidate runs second: the same settings twice differed by up to 8 % per
statement on a quiet 2-core machine, and the machine's other work counts."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import takewhile
from pathlib import Path

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from resources.spark import DeltaSparkResource

SUITE_SPARK_CONF = (
    "spark.sql.codegen.wholeStage=false,spark.sql.codegen.factoryMode=NO_CODEGEN,"
    "spark.sql.adaptive.enabled=false,spark.sql.shuffle.partitions=1,"
    "spark.databricks.delta.snapshotPartitions=1"
)
SUITE_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m -XX:+UseSerialGC"
# What the drivers are started with comes from the flags, not from this process's environment.
_SPARK_VARIABLES = ("LAKE_SPARK_CONF", "LAKE_JVM_OPTIONS", "LAKE_SPARK_REMOTE")
ROUND = [
    "CREATE TABLE t{n} (id BIGINT, category STRING, amount DECIMAL(10,2))",
    "INSERT INTO t{n} VALUES (1, 'Sports', 1.00), (2, 'Books', 2.00), (3, 'Sports', 3.00)",
    "UPDATE t{n} SET amount = amount * 2 WHERE id = 1",
    "DELETE FROM t{n} WHERE id = 2",
    "MERGE INTO t{n} d USING (SELECT * FROM VALUES (3, 'Sports', 9.00), (4, 'Toys', 4.00) "
    "AS s(id, category, amount)) s ON d.id = s.id "
    "WHEN MATCHED THEN UPDATE SET d.amount = s.amount WHEN NOT MATCHED THEN INSERT *",
    "SELECT * FROM t{n} ORDER BY id",
    "CREATE DYNAMIC TABLE d{n} AS SELECT category, count(*) AS orders, sum(amount) AS total "
    "FROM t{n} GROUP BY category",
    "INSERT INTO t{n} VALUES (5, 'Books', 5.00)",
    "REFRESH DYNAMIC TABLE d{n}",
]


def label(statement: str) -> str:
    """A statement's words up to the table's name, as the table of figures shows it."""
    return " ".join(takewhile(lambda word: "{" not in word, statement.split()[:3]))


def job_names(spark: SparkSession, group: str, job_ids: list[int]) -> list[str]:
    """What each job was and how long it ran: its description (Delta names its own; the group's
    name, which Delta puts in it, left out), else its call site."""
    store = spark.sparkContext._jsc.sc().statusStore()
    names = []
    for job_id in sorted(job_ids):
        job = store.job(job_id)
        description = job.description().get() if job.description().isDefined() else ""
        description = description.replace(f"{group}: ", "").replace(f"{group} - ", "")
        name = description if description != group else job.name()
        started, ended = job.submissionTime(), job.completionTime()
        took = ended.get().getTime() - started.get().getTime() if ended.isDefined() else 0
        names.append(f"{took:5d} ms  {name}")
    return names


def worker(rounds: int) -> None:
    """One driver (its settings come in the environment): the rounds, then one JSON line."""
    home = Path(tempfile.mkdtemp(prefix="bench-jobs-"))
    settings = LakeSettings.from_env()
    settings = LakeSettings(
        lake_home=home, jars_dir=settings.jars_dir, spark_conf=settings.spark_conf
    )
    spark = DeltaSparkResource.from_settings(settings).spark_session
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    context = spark.sparkContext
    jobs: list[list[int]] = [[] for _ in ROUND]
    millis: list[list[float]] = [[] for _ in ROUND]
    names: list[list[str]] = [[] for _ in ROUND]
    for number in range(rounds + 1):  # round 0 loads classes and fills caches
        for index, statement in enumerate(ROUND):
            group = f"round-{number}-{index}"
            context.setJobGroup(group, group)
            started = time.perf_counter()
            lake.sql(statement.format(n=number))
            elapsed = time.perf_counter() - started
            job_ids = list(context.statusTracker().getJobIdsForGroup(group))
            if number:
                jobs[index].append(len(job_ids))
                millis[index].append(elapsed * 1000)
                names[index] = job_names(spark, group, job_ids)
    spark.stop()
    shutil.rmtree(home, ignore_errors=True)
    print(json.dumps({"jobs": jobs, "millis": millis, "names": names}))


def measure(environ: dict[str, str], rounds: int) -> dict[str, list]:
    done = subprocess.run(
        [sys.executable, "-u", __file__, "--worker", "--rounds", str(rounds)],
        env=environ,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"the worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def environments(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str]]:
    """The baseline's and the candidate's environment."""
    base = {key: value for key, value in os.environ.items() if key not in _SPARK_VARIABLES}
    if args.host_zone:
        base["TZ"] = args.host_zone
    if not args.defaults:
        base["LAKE_SPARK_CONF"] = SUITE_SPARK_CONF
        base["LAKE_JVM_OPTIONS"] = SUITE_JVM_OPTIONS
    candidate = dict(base)
    conf = [base.get("LAKE_SPARK_CONF", ""), *(args.conf or [])]
    candidate["LAKE_SPARK_CONF"] = ",".join(entry for entry in conf if entry)
    options = [base.get("LAKE_JVM_OPTIONS", ""), args.jvm_options]
    candidate["LAKE_JVM_OPTIONS"] = " ".join(option for option in options if option)
    return base, candidate


def medians(result: dict[str, list], index: int | None) -> tuple[float, float]:
    """One statement's median jobs and milliseconds; with no index, the sums over the round."""
    indexes = range(len(ROUND)) if index is None else [index]
    return (
        sum(statistics.median(result["jobs"][at]) for at in indexes),
        sum(statistics.median(result["millis"][at]) for at in indexes),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--defaults", action="store_true", help="the product's Spark settings")
    parser.add_argument("--conf", action="append", help="KEY=VALUE for the candidate (repeatable)")
    parser.add_argument("--jvm-options", default="", help="JVM options for the candidate")
    parser.add_argument("--host-zone", default="", help="both drivers' default time zone")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each job")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.rounds)
        return
    base_environ, candidate_environ = environments(args)
    print(f"baseline: {'product defaults' if args.defaults else 'the suite settings'}")
    print(f"candidate adds: {', '.join(args.conf or [])} {args.jvm_options}".rstrip())
    base = measure(base_environ, args.rounds)
    candidate = measure(candidate_environ, args.rounds)
    print(f"medians over {args.rounds} rounds after a warm-up round")
    print(f"{'':22} {'baseline':>12}   {'candidate':>12}")
    print(f"{'statement':22} {'jobs':>5} {'ms':>6}   {'jobs':>5} {'ms':>6}   ms ratio")
    rows = [*enumerate(ROUND), (None, "round")]
    for index, statement in rows:
        (base_jobs, base_ms), (jobs, ms) = (medians(result, index) for result in (base, candidate))
        print(
            f"{label(statement):22} {base_jobs:5.0f} {base_ms:6.0f}   {jobs:5.0f} {ms:6.0f}"
            f"   x{ms / base_ms:.2f}"
        )
        if args.verbose and index is not None:
            for name, result in (("baseline", base), ("candidate", candidate)):
                for job in result["names"][index]:
                    print(f"    {name:9} {job[:100]}")


if __name__ == "__main__":
    main()
