"""A real Apache Kafka broker on 127.0.0.1 for tests and development (`lake kafka-broker`).

One JVM in KRaft mode, broker and controller in one node, run from the cached jars of a Kafka broker
(never on Spark's classpath)."""

from __future__ import annotations

import base64
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from lake_assets.core.errors import LakeError
from lake_assets.core.settings import LakeSettings
from resources.jvm import KAFKA_BROKER, check_java, fetch_jars
from resources.spark_server import LOOPBACK, die_with_parent, free_port, listening, stop

DEFAULT_PORT = 9092
START_SECONDS = 120.0
# Kafka's own scripts default to a 1 GB heap; a single-node broker for tests needs far less.
_JVM_OPTIONS = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]
_LOG4J_CONFIG = Path(__file__).with_name("kafka-log4j2.properties")
_TAIL_LINES = 20


@dataclass(frozen=True)
class Broker:
    """A running broker: its JVM, the bootstrap address for clients, and its console log."""

    process: subprocess.Popen
    bootstrap: str
    log: Path

    def stop(self) -> None:
        """SIGTERM: Kafka shuts down in a controlled way, so its data directory restarts cleanly."""
        stop(self.process)


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
        f"-Dlog4j2.configurationFile={_LOG4J_CONFIG}",
        "-cp",
        str(KAFKA_BROKER.folder(jars_dir) / "*"),
        main_class,
        *args,
    ]


def _cluster_id() -> str:
    """A random cluster id in Kafka's own form: a UUID in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def _format_storage(jars_dir: Path, data: Path, config: Path) -> None:
    """Format a new data directory once; a formatted one keeps its cluster id and topics."""
    if (data / "logs" / "meta.properties").exists():
        return
    command = _java(jars_dir, "kafka.tools.StorageTool", "format")
    command += ["--config", str(config), "--cluster-id", _cluster_id()]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LakeError(
            f"could not format the Kafka broker's storage in {data}: "
            f"{_tail(result.stdout + result.stderr)}",
            "delete that directory or choose another one",
        )


def _tail(text: str) -> str:
    return " | ".join(line for line in text.splitlines()[-_TAIL_LINES:] if line.strip())


def _answers(bootstrap: str) -> bool:
    """The broker serves metadata naming itself, so clients can create topics and produce."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        return bool(admin.list_topics(timeout=2).brokers)
    except KafkaException:
        return False


def _wait_until_ready(broker: Broker, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not (listening(port) and _answers(broker.bootstrap)):
        status = broker.process.poll()
        if status is not None or time.monotonic() > deadline:
            state = f"exited (status {status})" if status is not None else "did not answer"
            raise LakeError(
                f"the Kafka broker {state} on {broker.bootstrap}: "
                f"{_tail(broker.log.read_text(errors='replace'))}",
                f"see {broker.log}",
            )
        time.sleep(0.2)


def spawn_broker(
    jars_dir: Path,
    data: Path,
    log: Path,
    port: int | None = None,
    timeout: float = START_SECONDS,
) -> Broker:
    """Start a broker on `port` (a free one by default) keeping its topics in `data`; return
    once it answers clients. Its console goes to `log`; it dies with this process."""
    port = free_port() if port is None else port
    if listening(port):
        raise LakeError(
            f"port {port} on {LOOPBACK} is already in use (another Kafka broker?)",
            "stop what listens there or pick another port with --port",
        )
    data.mkdir(parents=True, exist_ok=True)
    config = data / "server.properties"
    config.write_text(server_properties(data, port, free_port()))
    _format_storage(jars_dir, data, config)
    log.parent.mkdir(parents=True, exist_ok=True)
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
        _wait_until_ready(broker, port, timeout)
    except BaseException:
        broker.stop()
        raise
    return broker


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
        status = broker.process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()
    raise LakeError(f"the Kafka broker exited by itself (status {status})", f"see {log}")
