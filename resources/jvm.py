"""JVM prerequisites: Java itself and named sets of jars (Delta Lake, Spark's Kafka source, Hadoop's
S3A filesystem, a Kafka broker), each fetched once with Maven and cached."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lake_assets.core.errors import LakeError

DELTA_ARTIFACT = "io.delta:delta-spark_4.2_2.13:4.4.0"


@dataclass(frozen=True)
class JarSet:
    """An artifact and its runtime dependencies as resolved by its pom file, cached per artifact
    so that a version bump fetches anew."""

    name: str
    artifact: str
    pom: Path

    def folder(self, jars_dir: Path) -> Path:
        return jars_dir / self.artifact.replace(":", "_")


DELTA = JarSet("Delta Lake", DELTA_ARTIFACT, Path(__file__).with_name("delta.pom.xml"))
SPARK_KAFKA = JarSet(
    "Spark's Kafka source",
    "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
    Path(__file__).with_name("spark-kafka.pom.xml"),
)
# Hadoop's S3A filesystem (hadoop-aws for pyspark's Hadoop 3.5.0, and the AWS SDK v2 modules it
# loads): a warehouse in object storage. 11 MB, so on every classpath like the others: a Spark
# Connect server or a shared session reaches an `s3a://` warehouse without a restart.
S3A = JarSet(
    "Hadoop's S3A filesystem",
    "org.apache.hadoop:hadoop-aws:3.5.0",
    Path(__file__).with_name("s3a.pom.xml"),
)
KAFKA_BROKER = JarSet(
    "a Kafka broker",
    "org.apache.kafka:kafka_2.13:4.4.0",
    Path(__file__).with_name("kafka-broker.pom.xml"),
)
# On every Spark session's classpath, local or Spark Connect server; `lake setup` fetches them.
SPARK_JAR_SETS = (DELTA, SPARK_KAFKA, S3A)
# Our own Java, compiled on first use against pyspark's Hadoop, Delta and S3A (`lake setup` does it
# once), in two jars that load differently: Delta's log store for an `s3a://` warehouse (commits by
# conditional PUT; docs/scale-out.md) extends Delta's, so it goes in spark.jars
# beside Delta; Hadoop's local filesystem without the `chmod` and `readlink` processes it starts
# for each file it writes when no native Hadoop library is loaded needs only Hadoop, and goes on
# the driver's own classpath, as the driver reads spark.jars through it (local masters use it).
S3_LOG_STORE = "lake.storage.ConditionalPutS3LogStore"
LOCAL_FILE_SYSTEM = "lake.storage.LocalFileSystem"
LOCAL_FILE_CONTEXT = "lake.storage.LocalFs"


@dataclass(frozen=True)
class JavaJar:
    """Some of our Java classes, compiled from their sources into one jar."""

    name: str
    classes: tuple[str, ...]

    @property
    def sources(self) -> list[Path]:
        root = Path(__file__).with_name("java")
        return [root.joinpath(*name.split(".")).with_suffix(".java") for name in self.classes]


S3_LOG_STORE_JAR = JavaJar("lake-s3-log-store", (S3_LOG_STORE,))
LOCAL_FILE_SYSTEM_JAR = JavaJar("lake-local-fs", (LOCAL_FILE_SYSTEM, LOCAL_FILE_CONTEXT))
JAVA_JARS = (S3_LOG_STORE_JAR, LOCAL_FILE_SYSTEM_JAR)


def check_java() -> str:
    """The java to run (JAVA_HOME's first, as Spark's scripts), or one sentence saying none is."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java:
        return java
    raise LakeError(
        "Spark and Kafka need Java 17 and none was found",
        "install a JDK (for example `apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME",
    )


def extra_jvm_options(environ: Mapping[str, str] | None = None) -> list[str]:
    """LAKE_JVM_OPTIONS, added to every JVM we start (Spark's driver and executors, a Spark Connect
    server, a Kafka broker, a cluster's daemons): e.g. `-XX:TieredStopAtLevel=1
    -XX:ReservedCodeCacheSize=512m`, which spares short jobs on small data most of the JIT
    compiler's work (the tests run so)."""
    return shlex.split((os.environ if environ is None else environ).get("LAKE_JVM_OPTIONS", ""))


def cached_jars(jar_set: JarSet, jars_dir: Path) -> list[Path]:
    """The cached jars, or an empty list when they have not been fetched yet."""
    folder = jar_set.folder(jars_dir)
    if not (folder / ".complete").exists():
        return []
    return sorted(folder.glob("*.jar"))


def fetch_jars(jar_set: JarSet, jars_dir: Path) -> list[Path]:
    """Copy a set's jars from Maven Central into the cache (Maven reuses ~/.m2 afterwards)."""
    jars = cached_jars(jar_set, jars_dir)
    if jars:
        return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LakeError(
            f"the jars of {jar_set.name} ({jar_set.artifact}) are not in {jars_dir} "
            "and Maven is missing",
            "install Maven (`apt-get install maven`) or copy the jars there and set LAKE_JARS_DIR",
        )
    folder = jar_set.folder(jars_dir)
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    result = subprocess.run(
        [
            mvn,
            "--batch-mode",
            "--quiet",
            "-f",
            str(jar_set.pom),
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
            f"could not fetch the jars of {jar_set.name} ({jar_set.artifact}) from Maven Central: "
            f"{reason}",
            "check network access to Maven Central (or Maven's proxy settings) and try again "
            "(`make jars` fetches Spark's)",
        )
    (staging / ".complete").touch()
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return cached_jars(jar_set, jars_dir)


def compiled_jar(java: JavaJar, jars_dir: Path) -> Path:
    """`java`'s classes compiled into a jar, cached per source."""
    sources = java.sources
    digest = hashlib.sha256(b"".join(source.read_bytes() for source in sources)).hexdigest()
    folder = jars_dir / f"{java.name}-{digest[:12]}"
    jar = folder / f"{java.name}.jar"
    if jar.exists():
        return jar
    import pyspark  # imported on use: loading the code location never needs it

    classpath = [Path(pyspark.__file__).parent / "jars" / "*"]
    for jar_set in (DELTA, S3A):
        fetch_jars(jar_set, jars_dir)
        classpath.append(jar_set.folder(jars_dir) / "*")
    # Each process compiles in a folder of its own (the test workers' first sessions start at
    # once); the first to finish publishes its jar, the others use it.
    staging = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    classes = staging / "classes"
    result = subprocess.run(
        [
            _javac(),
            "--release",
            "17",
            "-cp",
            os.pathsep.join(str(entry) for entry in classpath),
            "-d",
            str(classes),
            *(str(source) for source in sources),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise LakeError(
            f"could not compile {', '.join(java.classes)}: {result.stderr.strip()[:300]}",
            "check that the JDK is Java 17 or newer and that `lake setup` fetched the jars",
        )
    with zipfile.ZipFile(staging / jar.name, "w") as archive:
        for path in sorted(classes.rglob("*.class")):
            archive.write(path, path.relative_to(classes).as_posix())
    shutil.rmtree(classes)
    try:
        staging.rename(folder)
    except OSError:
        shutil.rmtree(staging)
        if not jar.exists():
            raise
    return jar


def _javac() -> str:
    """The Java compiler (JAVA_HOME's first), or one sentence saying a JDK is needed."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").exists():
        return str(Path(java_home) / "bin" / "javac")
    javac = shutil.which("javac")
    if javac:
        return javac
    raise LakeError(
        "the lake builds its Java classes (Delta's S3 log store, the local filesystem) with a Java "
        "compiler, and none was found",
        "install a JDK (for example `apt-get install openjdk-17-jdk-headless`) or set JAVA_HOME",
    )
