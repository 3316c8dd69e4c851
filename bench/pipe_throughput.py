"""Throughput of a pipe's load vs plain Spark writing the same CSV files to Delta, in one process.

    .venv/bin/python bench/pipe_throughput.py --total-mb 1024 --files 16

Prints MB/s for both (best of --rounds, alternating) and the ratio (goal: ours/plain >= 0.85)."""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

from lake_assets.core.catalog import Catalog
from lake_assets.core.settings import LakeSettings
from lake_assets.session import LakeSession
from resources.spark import DeltaSparkResource

COLUMNS = "id BIGINT, product STRING, category STRING, amount DECIMAL(10,2), dt STRING"
PRODUCTS = ["iPhone 15", "MacBook Pro", "AirPods", "Nike Air Max", "Yoga Mat", "Kindle"]


def generate(folder: Path, files: int, total_mb: int) -> tuple[int, int]:
    """Write `files` CSV files of about total_mb in all; returns (bytes, rows)."""
    folder.mkdir(parents=True)
    per_file = total_mb * 1024 * 1024 // files
    rng = random.Random(7)
    next_id, rows, written = 0, 0, 0
    for number in range(files):
        lines = []
        size = 0
        while size < per_file:
            product = rng.choice(PRODUCTS)
            line = f"{next_id},{product},{'Sports' if 'a' in product else 'Electronics'},"
            line += f"{rng.randint(100, 999999) / 100:.2f},2026-06-{rng.randint(1, 28):02d}\n"
            lines.append(line)
            size += len(line)
            next_id += 1
        (folder / f"part{number:05d}.csv").write_text("".join(lines))
        rows += len(lines)
        written += size
    return written, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--total-mb", type=int, default=1024)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lake-bench-"))
    try:
        settings = LakeSettings(lake_home=root / "lake", jars_dir=LakeSettings.from_env().jars_dir)
        spark = DeltaSparkResource.from_settings(
            settings, console_log=str(root / "console.log")
        ).spark_session
        files = root / "files"
        started = time.perf_counter()
        size, rows = generate(files, args.files, args.total_mb)
        print(f"generated {args.files} files, {size / 2**20:.0f} MB, {rows} rows "
              f"in {time.perf_counter() - started:.1f} s")  # fmt: skip

        session = LakeSession(Catalog(settings.catalog_location), settings, lambda: spark)
        session.sql(
            f"CREATE STORAGE CONNECTION c TYPE LOCAL;"
            f"CREATE EXTERNAL VOLUME v LOCATION 'file://{files}/' USING CONNECTION c "
            f"DIRECTORY = (ENABLE = FALSE)"
        )
        plain_times, our_times = [], []
        for round_number in range(args.rounds):  # alternate, so JVM warm-up favours neither
            started = time.perf_counter()
            (
                spark.read.schema(COLUMNS).csv(str(files))
                .write.format("delta").save(str(root / f"plain{round_number}"))
            )  # fmt: skip
            plain_times.append(time.perf_counter() - started)
            session.sql(f"CREATE TABLE t{round_number} ({COLUMNS})")
            started = time.perf_counter()
            (result,) = session.sql(f"COPY INTO t{round_number} FROM VOLUME v USING CSV")
            our_times.append(time.perf_counter() - started)
            print(f"round {round_number + 1}: plain {plain_times[-1]:.1f} s, "
                  f"ours {our_times[-1]:.1f} s ({result.message})")  # fmt: skip
        plain, ours = min(plain_times), min(our_times)

        megabytes = size / 2**20
        print(f"plain Spark CSV -> Delta: {plain:7.1f} s  {megabytes / plain:7.1f} MB/s")
        print(f"COPY INTO (pipe load):    {ours:7.1f} s  {megabytes / ours:7.1f} MB/s")
        print(f"ratio ours/plain throughput: {plain / ours:.2f}  (goal >= 0.85)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
