"""Reading an S3 volume's files in local mode: through the local copies the driver keeps (cold
cache: downloaded first; warm: the ETag is checked only) vs Spark reading `s3a://` directly, in
one process, against moto's S3 server on 127.0.0.1.

    .venv/bin/python -u -m bench.s3_volume_reads [--files 16] [--total-mb 256] [--rounds 3]

(run as a module from the repository's root: it starts the tests' S3 server)

Each round, in alternating order, reads all files as CSV and counts them (noop sink). Prints the
best seconds of each way and the ratios: which way an embedded (local master) lake should use."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from bench.pipe_throughput import COLUMNS, generate
from lake_assets.core.settings import LakeSettings
from resources.spark import DeltaSparkResource
from resources.storage import S3Store
from tests.s3_server import ACCESS_ID, ACCESS_KEY, REGION, moto_server, new_bucket


def read(spark: SparkSession, paths: list[str]) -> None:
    spark.read.schema(COLUMNS).csv(paths).write.format("noop").mode("overwrite").save()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--total-mb", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lake-s3-reads-"))
    try:
        with moto_server(root) as endpoint:
            settings = LakeSettings(
                lake_home=root / "lake", jars_dir=LakeSettings.from_env().jars_dir
            )
            spark = DeltaSparkResource.from_settings(
                settings, console_log=str(root / "console.log")
            ).spark_session
            try:
                return measure(spark, endpoint, root, args)
            finally:
                spark.stop()
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure(spark: SparkSession, endpoint: str, root: Path, args: argparse.Namespace) -> int:
    s3, bucket = new_bucket(endpoint)
    size, rows = generate(root / "files", args.files, args.total_mb)
    names = sorted(path.name for path in (root / "files").iterdir())
    for name in names:
        s3.upload_file(str(root / "files" / name), bucket, f"landing/{name}")
    for key, value in {
        "endpoint": endpoint,
        "endpoint.region": REGION,
        "path.style.access": "true",
        "connection.ssl.enabled": "false",
        "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "access.key": ACCESS_ID,
        "secret.key": ACCESS_KEY,
    }.items():
        spark.conf.set(f"fs.s3a.bucket.{bucket}.{key}", value)
    print(f"{len(names)} files, {size / 2**20:.0f} MB, {rows:,} rows in s3://{bucket}/landing/")

    def copies(cache: Path) -> None:
        store = S3Store(s3, bucket, "landing/", cache)
        read(spark, [str(store.local_path(name)) for name in names])

    warm = root / "warm-cache"
    copies(warm)
    ways: dict[str, Callable[[int], None]] = {
        "copies, cold cache": lambda n: copies(root / f"cold-cache-{n}"),
        "copies, warm cache": lambda n: copies(warm),
        "s3a, direct": lambda n: read(spark, [f"s3a://{bucket}/landing/{name}" for name in names]),
    }
    read(spark, [f"s3a://{bucket}/landing/{name}" for name in names])  # warms the JVM's compiler
    times: dict[str, list[float]] = {way: [] for way in ways}
    for number in range(args.rounds):
        order = list(ways) if number % 2 == 0 else list(reversed(ways))
        for way in order:
            started = time.perf_counter()
            ways[way](number)
            times[way].append(time.perf_counter() - started)
        print(f"round {number + 1}: " + ", ".join(f"{w} {times[w][-1]:.2f} s" for w in ways))
    best = {way: min(values) for way, values in times.items()}
    direct = best["s3a, direct"]
    print(f"\nbest of {args.rounds}:")
    for way, seconds in best.items():
        rate = size / 2**20 / seconds
        print(f"{way:20} {seconds:6.2f} s  {rate:7.1f} MB/s  x{seconds / direct:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
