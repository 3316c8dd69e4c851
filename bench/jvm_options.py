"""What LAKE_JVM_OPTIONS buys a driver that runs many small statements, as the tests do.

    .venv/bin/python -u bench/jvm_options.py --rounds 10

For each set of JVM options (none, then the ones given with --options, by default C1 alone and C1
with a tiered-size code cache) a new Python process starts its own Spark driver with them and
runs --rounds rounds of the same small lakehouse through our SQL: a table of a few rows, INSERT,
UPDATE, DELETE, MERGE, a SELECT, a stream read, a dynamic table created and refreshed, all
dropped again. It prints the driver JVM's CPU seconds over the rounds after the first (split into
the JIT compiler's threads, the code cache sweeper and the rest), the rounds' wall time, the code
cache in use at the end, and each set's CPU and wall as a ratio of the first set's. The machine's
other work counts in the wall time, not in the CPU seconds."""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from resources.spark import DeltaSparkResource

DEFAULT_OPTIONS = [
    "-XX:TieredStopAtLevel=1",
    "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m",
]
ROUND = """
CREATE TABLE t{n} (id BIGINT, category STRING, amount DECIMAL(10,2));
INSERT INTO t{n} VALUES (1, 'Sports', 1.00), (2, 'Books', 2.00), (3, 'Sports', 3.00);
CREATE STREAM s{n} ON TABLE t{n};
UPDATE t{n} SET amount = amount * 2 WHERE category = 'Sports';
DELETE FROM t{n} WHERE id = 2;
MERGE INTO t{n} d USING (SELECT * FROM VALUES (3, 'Sports', 9.00), (4, 'Toys', 4.00)
  AS s(id, category, amount)) s ON d.id = s.id
  WHEN MATCHED THEN UPDATE SET d.amount = s.amount WHEN NOT MATCHED THEN INSERT *;
SELECT * FROM t{n} ORDER BY id;
SELECT * FROM s{n};
CREATE DYNAMIC TABLE d{n} AS SELECT category, count(*) AS orders FROM t{n} GROUP BY category;
INSERT INTO t{n} VALUES (5, 'Books', 5.00);
REFRESH DYNAMIC TABLE d{n};
DROP DYNAMIC TABLE d{n};
DROP STREAM s{n};
DROP TABLE t{n}
"""


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of a process's threads, summed by thread name without its digits."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds: collections.Counter[str] = collections.Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip().rstrip("0123456789#")
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        seconds[name] += (int(fields[11]) + int(fields[12])) / tick
    return dict(seconds)


def grouped(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    spent = {name: after[name] - before.get(name, 0.0) for name in after}
    compiler = sum(value for name, value in spent.items() if "CompilerThre" in name)
    sweeper = sum(value for name, value in spent.items() if "Sweeper" in name)
    total = sum(spent.values())
    return {
        "cpu": total,
        "compiler": compiler,
        "sweeper": sweeper,
        "rest": total - compiler - sweeper,
    }


def worker(rounds: int) -> None:
    """One driver (its JVM options come in LAKE_JVM_OPTIONS): the rounds, then one JSON line."""
    home = Path(tempfile.mkdtemp(prefix="bench-jvm-"))
    settings = LakeSettings.from_env()
    settings = LakeSettings(
        lake_home=home, jars_dir=settings.jars_dir, spark_conf=settings.spark_conf
    )
    spark: SparkSession = DeltaSparkResource.from_settings(settings).spark_session
    lake = LakeSession(Catalog(settings.catalog_path), settings, lambda: spark)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    lake.sql(ROUND.format(n=0))  # the first round loads classes and fills caches
    before, started = thread_cpu(pid), time.perf_counter()
    for n in range(1, rounds + 1):
        lake.sql(ROUND.format(n=n))
    wall = time.perf_counter() - started
    figures = grouped(before, thread_cpu(pid))
    cache = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    used = sum(
        pool.getUsage().getUsed()
        for pool in cache
        if "CodeHeap" in pool.getName() or pool.getName() == "CodeCache"
    )
    print(json.dumps({**figures, "wall": wall, "code_cache_mb": used / 2**20}))
    spark.stop()


def measure(options: str, rounds: int) -> dict[str, float]:
    env = {**os.environ, "LAKE_JVM_OPTIONS": options}
    done = subprocess.run(
        [sys.executable, "-u", __file__, "--worker", "--rounds", str(rounds)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--options", action="append", help="a set of JVM options (repeatable)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.rounds)
        return
    sets = ["", *(args.options or DEFAULT_OPTIONS)]
    baseline: dict[str, float] | None = None
    print(f"{args.rounds} rounds of {ROUND.count(';') + 1} statements after a first round")
    for options in sets:
        figures = measure(options, args.rounds)
        baseline = baseline or figures
        print(
            f"{options or '(JVM defaults)':58} CPU {figures['cpu']:6.1f} s "
            f"(JIT {figures['compiler']:5.1f}, sweeper {figures['sweeper']:5.1f}, "
            f"rest {figures['rest']:6.1f})  wall {figures['wall']:6.1f} s  "
            f"code cache {figures['code_cache_mb']:5.1f} MB  "
            f"CPU x{figures['cpu'] / baseline['cpu']:.2f} "
            f"wall x{figures['wall'] / baseline['wall']:.2f}"
        )


if __name__ == "__main__":
    main()
