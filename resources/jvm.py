"""JVM prerequisites for Spark: Java itself and Delta Lake's jars, fetched once and cached."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from lake_assets.core.errors import LakeError

DELTA_ARTIFACT = "io.delta:delta-spark_4.2_2.13:4.4.0"
_DELTA_POM = Path(__file__).with_name("delta.pom.xml")


def check_java() -> None:
    """Fail with one sentence when no Java runtime is reachable."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return
    if shutil.which("java"):
        return
    raise LakeError(
        "Spark needs a Java 17 runtime and none was found",
        "install it (for example `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME",
    )


def _delta_dir(jars_dir: Path) -> Path:
    return jars_dir / DELTA_ARTIFACT.replace(":", "_")


def cached_delta_jars(jars_dir: Path) -> list[Path]:
    """The cached jars, or an empty list when they have not been fetched yet."""
    folder = _delta_dir(jars_dir)
    if not (folder / ".complete").exists():
        return []
    return sorted(folder.glob("*.jar"))


def fetch_delta_jars(jars_dir: Path) -> list[Path]:
    """Copy Delta Lake's jars from Maven Central into the cache (Maven reuses ~/.m2 afterwards)."""
    jars = cached_delta_jars(jars_dir)
    if jars:
        return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LakeError(
            f"Delta Lake's jars ({DELTA_ARTIFACT}) are not in {jars_dir} and Maven is missing",
            "install Maven (`apt-get install maven`) or copy the jars there and set LAKE_JARS_DIR",
        )
    folder = _delta_dir(jars_dir)
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    result = subprocess.run(
        [
            mvn,
            "--batch-mode",
            "--quiet",
            "-f",
            str(_DELTA_POM),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        lines = [line for line in result.stdout.splitlines() if "ERROR" in line]
        reason = lines[0] if lines else result.stderr.strip()[:200]
        raise LakeError(
            f"could not fetch Delta Lake's jars ({DELTA_ARTIFACT}) from Maven Central: {reason}",
            "check network access to Maven Central (or Maven's proxy settings) and run `make jars`",
        )
    (staging / ".complete").touch()
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return cached_delta_jars(jars_dir)
