"""The `lake` command: run the lakehouse's SQL from a string or a file."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from lake_assets.changes import dagster_reporter
from lake_assets.code_server import serve as serve_code
from lake_assets.code_server import workspace_file
from lake_assets.core.catalog import Catalog
from lake_assets.core.catalog_file import damaged, integrity_problems
from lake_assets.core.errors import LakeError
from lake_assets.core.rendering import visible
from lake_assets.core.settings import LakeSettings
from lake_assets.lake_session import LakeSession
from lake_assets.output import FORMATS, write_result
from lake_assets.sql.grammar import StatementError
from resources import spark_cluster
from resources.jvm import JAVA_JARS, SPARK_JAR_SETS, check_java, compiled_jar, fetch_jars
from resources.kafka_broker import DEFAULT_PORT as KAFKA_PORT
from resources.kafka_broker import serve as serve_kafka
from resources.spark import DeltaSparkResource
from resources.spark_server import serve, server_port


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lake", description="A self-driving lakehouse on Dagster, Spark and Delta Lake."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    sql = commands.add_parser("sql", help="run SQL statements (';'-separated, '--' comments)")
    source = sql.add_mutually_exclusive_group(required=True)
    source.add_argument("-e", "--execute", metavar="SQL", help="the statements to run")
    source.add_argument(
        "-f", "--file", metavar="FILE", type=Path, help="a script to run ('-' reads stdin)"
    )
    sql.add_argument(
        "--format", choices=FORMATS, default="table", help="output format (default: table)"
    )
    sql.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    setup = commands.add_parser(
        "setup", help="check Java and fetch the jars of Delta Lake and Spark's Kafka source once"
    )
    setup.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    server = commands.add_parser(
        "spark-server", help="run a warm Spark Connect server on 127.0.0.1 (Ctrl-C stops it)"
    )
    server.add_argument(
        "--port", type=int, help="port to listen on (default: LAKE_SPARK_REMOTE's, else 15002)"
    )
    server.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    cluster = commands.add_parser(
        "spark-cluster",
        help="run a Spark standalone master and one worker on 127.0.0.1 (Ctrl-C stops them)",
    )
    cluster.add_argument(
        "--port",
        type=int,
        default=spark_cluster.DEFAULT_PORT,
        help=f"the master's port (default: {spark_cluster.DEFAULT_PORT})",
    )
    cluster.add_argument(
        "--webui-port",
        type=int,
        default=spark_cluster.DEFAULT_WEBUI_PORT,
        help=f"the master's web UI port (default: {spark_cluster.DEFAULT_WEBUI_PORT})",
    )
    cluster.add_argument(
        "--cores",
        type=int,
        default=spark_cluster.DEFAULT_CORES,
        help=f"the worker's cores (default: {spark_cluster.DEFAULT_CORES})",
    )
    cluster.add_argument(
        "--memory",
        default=spark_cluster.DEFAULT_MEMORY,
        help=f"the worker's memory for executors (default: {spark_cluster.DEFAULT_MEMORY})",
    )
    cluster.add_argument(
        "--dir", type=Path, help="logs and executors' folders (default: $LAKE_HOME/spark-cluster)"
    )
    cluster.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    kafka = commands.add_parser(
        "kafka-broker",
        help="run a single-node Kafka broker on 127.0.0.1 for development (Ctrl-C stops it)",
    )
    kafka.add_argument(
        "--port", type=int, default=KAFKA_PORT, help=f"port to listen on (default: {KAFKA_PORT})"
    )
    kafka.add_argument(
        "--data", type=Path, help="where it keeps its topics (default: $LAKE_HOME/kafka)"
    )
    kafka.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    code = commands.add_parser(
        "code-server",
        help="serve the Dagster code location and serve it anew when the catalog changes",
    )
    code.add_argument(
        "--workspace",
        type=Path,
        help="the workspace file to write for Dagster (default: $DAGSTER_HOME/workspace.yaml)",
    )
    code.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    catalog = commands.add_parser("catalog", help="look after the embedded SQLite catalog's file")
    catalog_commands = catalog.add_subparsers(dest="catalog_command", required=True)
    check = catalog_commands.add_parser(
        "check",
        help="run SQLite's integrity check on the catalog: prints ok (exit 0) or what is "
        "damaged (exit 1)",
    )
    check.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    return parser


def _read_script(args: argparse.Namespace) -> str:
    if args.execute is not None:
        return args.execute
    if str(args.file) == "-":
        return sys.stdin.read()
    try:
        return args.file.read_text(encoding="utf-8")
    except OSError as error:
        raise LakeError(
            f"cannot read {args.file}: {error.strerror}", "check the file's path"
        ) from None


def _session(settings: LakeSettings) -> LakeSession:
    """The JVM's own console chatter goes to a log file; the terminal shows results and errors."""
    resource = DeltaSparkResource.from_settings(
        settings, console_log=str(settings.log_dir / "spark-console.log")
    )
    catalog = Catalog(settings.catalog_location)
    return LakeSession(
        catalog, settings, lambda: resource.spark_session, changed=dagster_reporter(catalog)
    )


def run_sql(args: argparse.Namespace) -> int:
    try:
        session = _session(LakeSettings.from_env())
        for result in session.run(_read_script(args)):
            write_result(result, args.format, sys.stdout)
    except StatementError as error:
        return _fail(f"statement {error.number}: {error}", args.debug)
    except LakeError as error:
        return _fail(str(error), args.debug)
    except Exception as error:
        return _fail(
            f"unexpected {type(error).__name__}: {error} — run again with --debug and report it",
            args.debug,
        )
    return 0


def run_setup(args: argparse.Namespace) -> int:
    try:
        settings = LakeSettings.from_env()
        check_java()
        counts = [
            f"{len(fetch_jars(jar_set, settings.jars_dir))} of {jar_set.name}"
            for jar_set in SPARK_JAR_SETS
        ]
        for java in JAVA_JARS:
            compiled_jar(java, settings.jars_dir)
    except LakeError as error:
        return _fail(str(error), args.debug)
    print(
        f"Java found; jars cached and the lake's classes compiled under {settings.jars_dir}: "
        f"{', '.join(counts)}"
    )
    return 0


def run_spark_server(args: argparse.Namespace) -> int:
    try:
        settings = LakeSettings.from_env()
        return serve(settings, server_port(settings, args.port))
    except LakeError as error:
        return _fail(str(error), args.debug)


def run_spark_cluster(args: argparse.Namespace) -> int:
    try:
        return spark_cluster.serve(
            LakeSettings.from_env(), args.port, args.webui_port, args.cores, args.memory, args.dir
        )
    except LakeError as error:
        return _fail(str(error), args.debug)


def run_kafka_broker(args: argparse.Namespace) -> int:
    try:
        return serve_kafka(LakeSettings.from_env(), args.port, args.data)
    except LakeError as error:
        return _fail(str(error), args.debug)


def run_code_server(args: argparse.Namespace) -> int:
    try:
        return serve_code(LakeSettings.from_env(), args.workspace or workspace_file(os.environ))
    except LakeError as error:
        return _fail(str(error), args.debug)


def run_catalog_check(args: argparse.Namespace) -> int:
    try:
        settings = LakeSettings.from_env()
        problems = integrity_problems(settings)
    except LakeError as error:
        return _fail(str(error), args.debug)
    if not problems:
        print("ok")
        return 0
    for problem in problems:
        print(problem)
    return _fail(str(damaged(settings.catalog_path, "its integrity check failed")), False)


def _fail(message: str, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"error: {visible(message)}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        commands = {
            "catalog": run_catalog_check,
            "code-server": run_code_server,
            "kafka-broker": run_kafka_broker,
            "setup": run_setup,
            "spark-cluster": run_spark_cluster,
            "spark-server": run_spark_server,
            "sql": run_sql,
        }
        return commands[args.command](args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
