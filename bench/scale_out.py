"""The pipe's load and a dynamic table's refresh, embedded (local master, tables and files on local
disk) and scaled out (a standalone master and worker from the pyspark package, tables in an S3
warehouse, files in an S3 volume; moto's S3 server on 127.0.0.1), in one run.

    .venv/bin/python -u -m bench.scale_out [--total-mb 256] [--files 8] [--rows 4000000]

(run as a module from the repository's root: it starts the tests' S3 server)

Each deployment runs in a process of its own (a process has one Spark master): a COPY INTO of the
CSV files (MB/s), then a dynamic table over `--rows` orders is refreshed after 0.1 % of them
changed (INCREMENTAL) and in full, best of --rounds each. Prints both deployments side by side and
the ratio of their times, cluster/local (above 1: the cluster path costs more)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.dynamic_refresh import change, fill
from bench.pipe_throughput import COLUMNS, generate
from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.dynamic_tables.refreshes import REFRESHES
from lake_assets.session import LakeSession
from resources.spark import DeltaSparkResource
from resources.spark_cluster import local_cluster
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, moto_server, new_bucket

GROUPS = 10_000
SUMMARY = "SELECT grp, COUNT(*) AS orders, SUM(amount) AS total FROM orders GROUP BY grp"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--total-mb", type=int, default=256)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deployment", choices=["local", "cluster"], help=argparse.SUPPRESS)
    parser.add_argument("--volume", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.deployment:
        print(json.dumps(measure(args)))
        return 0
    root = Path(tempfile.mkdtemp(prefix="lake-scale-out-bench-"))
    try:
        return compare(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def compare(root: Path, args: argparse.Namespace) -> int:
    files = root / "files"
    size, rows = generate(files, args.files, args.total_mb)
    print(f"{args.files} CSV files, {size / 2**20:.0f} MB, {rows:,} rows; {args.rows:,} orders")
    with moto_server(root) as endpoint:
        s3, bucket = new_bucket(endpoint)
        for path in sorted(files.iterdir()):
            s3.upload_file(str(path), bucket, f"incoming/{path.name}")
        aws = {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_ID,
            "AWS_SECRET_ACCESS_KEY": ACCESS_KEY,
            "AWS_REGION": REGION,
        }
        os.environ.update(aws)  # the worker's, which its executors inherit
        with local_cluster(root / "cluster", cores=2, memory="2g") as cluster:
            print(f"cluster: {cluster.master_url}, one worker with 2 cores, as local[2] has")
            local = _deployment(args, root / "local", f"file://{files}/", {})
            scaled = _deployment(
                args,
                root / "cluster-home",
                f"s3://{bucket}/incoming/",
                {
                    "LAKE_SPARK_MASTER": cluster.master_url,
                    "LAKE_WAREHOUSE": f"s3a://{bucket}/warehouse/",
                    "SPARK_LOCAL_IP": "127.0.0.1",
                },
            )
    report(local, scaled, size)
    return 0


def _deployment(
    args: argparse.Namespace, home: Path, volume: str, extra: dict[str, str]
) -> dict[str, float | str]:
    env = {**os.environ, "LAKE_HOME": str(home), **extra}
    env.pop("LAKE_SPARK_REMOTE", None)
    command = [sys.executable, "-u", "-m", "bench.scale_out", "--volume", volume]
    command += ["--deployment", "cluster" if extra else "local", "--rows", str(args.rows)]
    command += ["--rounds", str(args.rounds)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the {command[-5]} deployment failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(args: argparse.Namespace) -> dict[str, float | str]:
    """In the child: this deployment's figures, from LAKE_* and AWS_* in the environment."""
    settings = LakeSettings.from_env()
    spark = DeltaSparkResource.from_settings(settings).spark_session
    lake = LakeSession(Catalog(settings.catalog_location), settings, lambda: spark)
    s3 = args.volume.startswith("s3://")
    lake.sql(
        f"CREATE STORAGE CONNECTION c TYPE S3 ENDPOINT = '{os.environ['AWS_ENDPOINT_URL']}' "
        f"ACCESS_ID = '{ACCESS_ID}' ACCESS_KEY = '{ACCESS_KEY}' REGION = '{REGION}'"
        if s3
        else "CREATE STORAGE CONNECTION c TYPE LOCAL"
    )
    lake.sql(
        f"CREATE EXTERNAL VOLUME v LOCATION '{args.volume}' USING CONNECTION c "
        "DIRECTORY = (ENABLE = FALSE)"
    )
    figures: dict[str, float | str] = {"master": spark.sparkContext.master}
    copies = []
    for number in range(args.rounds):
        lake.sql(f"CREATE TABLE t{number} ({COLUMNS})")
        copies.append(_timed(lambda n=number: lake.sql(f"COPY INTO t{n} FROM VOLUME v USING CSV")))
    figures["copy"] = min(copies)
    fill(lake, "", args.rows, GROUPS)
    lake.sql(f"CREATE DYNAMIC TABLE summary AS {SUMMARY}")
    top, incremental, full = args.rows, [], []
    for _ in range(args.rounds):
        top, _ranges = change(lake, "", args.rows, GROUPS, args.rows // 1000, top)
        incremental.append(_timed(lambda: lake.sql("REFRESH DYNAMIC TABLE summary")))
        latest = max(REFRESHES.newest_first(lake.catalog, "summary"), key=lambda r: r.start_time)
        figures["incremental_mode"] = str(latest.refresh_mode)
        full.append(
            _timed(lambda: lake.sql(f"CREATE OR REPLACE DYNAMIC TABLE summary AS {SUMMARY}"))
        )
    figures["incremental"], figures["full"] = min(incremental), min(full)
    spark.stop()
    return figures


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def report(local: dict[str, float | str], scaled: dict[str, float | str], size: int) -> None:
    print(f"\n{'':48}{'local':>10}{'cluster+S3':>12}{'time cluster/local':>20}")
    megabytes = size / 2**20
    rows = [
        ("COPY INTO from the volume (MB/s)", "copy", True),
        (f"refresh after 0.1 % changed, {local['incremental_mode']} (s)", "incremental", False),
        ("refresh in full, CREATE OR REPLACE (s)", "full", False),
    ]
    for label, key, rate in rows:
        mine, theirs = float(local[key]), float(scaled[key])
        shown = (megabytes / mine, megabytes / theirs) if rate else (mine, theirs)
        print(f"{label:48}{shown[0]:10.2f}{shown[1]:12.2f}{theirs / mine:20.2f}")
    print(f"(masters: {local['master']} and {scaled['master']})")


if __name__ == "__main__":
    sys.exit(main())
