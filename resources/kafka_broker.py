"""A real Apache Kafka broker on 127.0.0.1 for tests and development (`lake kafka-broker`).

One JVM in KRaft mode, broker and controller in one node, run from the cached jars of a Kafka broker
(never on Spark's classpath)."""

from __future__ import annotations

import base64
import signal
import subprocess
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from resources.jvm import KAFKA_BROKER, check_java, extra_jvm_options, fetch_jars
from resources.spark_server import (
    LOOPBACK,
    die_with_parent,
    free_port,
    listening,
    stop,
    until_stopped,
)

DEFAULT_PORT = 9092
START_SECONDS = 120.0
# Kafka's own scripts default to a 1 GB heap; a single-node broker for tests needs far less.
_JVM_OPTIONS = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]
_LOG4J_CONFIG = Path(__file__).with_name("kafka-log4j2.properties")
_TAIL_LINES = 20
# Ports are picked free and bound by the JVM a moment later, when another process may have taken
# one: a broker that could not bind starts again on other ports, this many times in all.
PORT_ATTEMPTS = 5
_PORT_TAKEN = "Address already in use"


@dataclass(frozen=True)
class Broker:
    """A running broker: its JVM, the bootstrap address for clients, and its console log."""

    process: subprocess.Popen
    bootstrap: str
    log: Path

    def stop(self) -> None:
        """SIGTERM: Kafka shuts down in a controlled way, so its data directory restarts cleanly."""
        stop(self.process)


class PortTaken(LakeError):
    """The broker could not bind a port picked free a moment before: another process took it."""


def server_properties(data: Path, port: int, controller_port: int) -> str:
    """A single node's configuration; topics are created explicitly (auto-creation is off), as a
    pipe's topic is the producer's to create, and one replica is all there is."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        # Static voters: the controller's port may change between runs of one data directory.
        "controller.quorum.voters": f"1@{LOOPBACK}:{controller_port}",
        "listeners": f"PLAINTEXT://{LOOPBACK}:{port},CONTROLLER://{LOOPBACK}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data / "logs"),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _java(jars_dir: Path, main_class: str, *args: str) -> list[str]:
    fetch_jars(KAFKA_BROKER, jars_dir)
    return [
        check_java(),
        *_JVM_OPTIONS,
        *extra_jvm_options(),
        f"-Dlog4j2.configurationFile={_LOG4J_CONFIG}",
        "-cp",
        str(KAFKA_BROKER.folder(jars_dir) / "*"),
        main_class,
        *args,
    ]


def new_cluster_id() -> str:
    """A random cluster id in Kafka's own form: a UUID in URL-safe base64 without padding (one in
    64 starts with '-', which format_storage passes as `--cluster-id=…`, never as a flag)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def cluster_id_of(data: Path) -> str | None:
    """The cluster id a formatted data directory was given (None: not formatted yet)."""
    meta = data / "logs" / "meta.properties"
    if not meta.exists():
        return None
    fields = dict(
        line.split("=", 1)
        for line in meta.read_text().splitlines()
        if "=" in line and line[0] != "#"
    )
    return fields.get("cluster.id")


def format_storage(jars_dir: Path, data: Path, config: Path, cluster_id: str) -> str:
    """Format a new data directory once, as cluster `cluster_id`; a formatted one keeps its
    cluster id and topics. The directory's cluster id."""
    formatted = cluster_id_of(data)
    if formatted is not None:
        return formatted
    command = _java(jars_dir, "kafka.tools.StorageTool", "format")
    command += ["--config", str(config), f"--cluster-id={cluster_id}"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LakeError(
            f"could not format the Kafka broker's storage in {data}: "
            f"{_tail(result.stdout + result.stderr)}",
            "delete that directory or choose another one",
        )
    return cluster_id


def _tail(text: str) -> str:
    return " | ".join(line for line in text.splitlines()[-_TAIL_LINES:] if line.strip())


def _answers(bootstrap: str, cluster_id: str) -> bool:
    """The broker serves metadata naming itself, so clients can create topics and produce; and
    it is this broker (its cluster id), not another one that took the port meanwhile."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        metadata = admin.list_topics(timeout=2)
    except KafkaException:
        return False
    return bool(metadata.brokers) and metadata.cluster_id == cluster_id


def _wait_until_ready(
    broker: Broker, port: int, cluster_id: str, since: int, timeout: float
) -> None:
    """Until the broker answers as itself; its log from offset `since` says why it did not."""
    deadline = time.monotonic() + timeout
    while not (listening(port) and _answers(broker.bootstrap, cluster_id)):
        status = broker.process.poll()
        if status is not None or time.monotonic() > deadline:
            with broker.log.open("rb") as output:
                output.seek(since)
                said = output.read().decode(errors="replace")
            state = f"exited (status {status})" if status is not None else "did not answer"
            failure = PortTaken if status is not None and _PORT_TAKEN in said else LakeError
            raise failure(
                f"the Kafka broker {state} on {broker.bootstrap}: {_tail(said)}",
                f"see {broker.log}",
            )
        time.sleep(0.2)


def _start(jars_dir: Path, data: Path, log: Path, port: int, timeout: float) -> Broker:
    """One try on `port` with a new controller port; PortTaken when a port was taken."""
    config = data / "server.properties"
    config.write_text(server_properties(data, port, free_port()))
    cluster_id = format_storage(jars_dir, data, config, new_cluster_id())
    since = log.stat().st_size if log.exists() else 0
    with log.open("ab") as output:
        process = subprocess.Popen(
            _java(jars_dir, "kafka.Kafka", str(config)),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a terminal's Ctrl-C reaches us; we stop the JVM once
            preexec_fn=die_with_parent,
        )
    broker = Broker(process, f"{LOOPBACK}:{port}", log)
    try:
        _wait_until_ready(broker, port, cluster_id, since, timeout)
    except BaseException:
        broker.stop()
        raise
    return broker


def spawn_broker(
    jars_dir: Path,
    data: Path,
    log: Path,
    port: int | None = None,
    timeout: float = START_SECONDS,
) -> Broker:
    """Start a broker on `port` (a free one by default) keeping its topics in `data`; return
    once it answers clients. Its console goes to `log`; it dies with this process. A port taken
    between its pick and the broker's bind is picked again (the controller's always, the
    broker's unless given)."""
    if port is not None and listening(port):
        raise LakeError(
            f"port {port} on {LOOPBACK} is already in use (another Kafka broker?)",
            "stop what listens there or pick another port with --port",
        )
    data.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(PORT_ATTEMPTS - 1):
        with suppress(PortTaken):
            return _start(jars_dir, data, log, port or free_port(), timeout)
    return _start(jars_dir, data, log, port or free_port(), timeout)


def serve(settings: LakeSettings, port: int, data: Path | None = None) -> int:
    """Run a broker in the foreground until SIGINT/SIGTERM, then stop it cleanly."""
    log = settings.log_dir / "kafka-broker.log"
    data = data or settings.lake_home / "kafka"
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    broker = spawn_broker(settings.jars_dir, data, log, port)
    print(
        f"Kafka broker listening on {broker.bootstrap} (topics in {data}, logs in {log}); "
        "Ctrl-C stops it",
        flush=True,
    )
    try:
        if until_stopped(lambda: broker.process.poll() is None):
            return 0
    finally:
        broker.stop()
    status = broker.process.returncode
    raise LakeError(f"the Kafka broker exited by itself (status {status})", f"see {log}")
