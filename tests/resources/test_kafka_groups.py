"""A consumer group's committed offsets, read while the broker's group coordinator is not
ready: librdkafka's admin client crashed the whole process (SIGSEGV) on that answer."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.streams.test_kill import ROOT

# Each test starts a process of its own: not a unit test (see tests/conftest.py).
pytestmark = pytest.mark.slow

# Run in a process of its own: before the fix it died of SIGSEGV, which would end pytest too.
NOT_COORDINATOR_ONCE = """
from confluent_kafka import KafkaError
from resources.kafka import KafkaAdmin, Topic
from tests.kafka_server import OFFSET_FETCH, MockCluster

cluster = MockCluster()
cluster.create_topic("t", 2)
admin = KafkaAdmin(cluster.bootstrap, {})
admin.commit("g", "t", {0: 3, 1: 5})
cluster.fail_next(OFFSET_FETCH, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE)
print(admin.committed("g", Topic("t", "id", (0, 1))))
cluster.close()
"""


def test_committed_offsets_are_read_again_after_a_not_coordinator_answer() -> None:
    """What a fresh broker answers while its group coordinator starts, or one that moves."""
    done = subprocess.run(
        [sys.executable, "-c", NOT_COORDINATOR_ONCE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert done.stdout.splitlines()[-1] == "{0: 3, 1: 5}"
