"""A real S3 endpoint for tests: moto's server in its own process, spoken to over HTTP."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.server_ports import failed_to_start, listens, log_size, on_a_free_port

ACCESS_ID = "testing"
ACCESS_KEY = "testing"
REGION = "us-east-1"


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _start(log_path: Path, timeout: float, port: int) -> tuple[subprocess.Popen, str]:
    deadline = time.monotonic() + timeout
    endpoint = f"http://127.0.0.1:{port}"
    since = log_size(log_path)
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    # Another session's moto may answer on the port: ours is up once it is the one listening.
    while not (_answers(endpoint) and listens(process, port)):
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            raise failed_to_start(log_path, since, f"moto server on {endpoint}", port)
        time.sleep(0.05)
    return process, endpoint


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def moto_server(log_dir: Path, timeout: float = 60.0) -> Iterator[str]:
    """Start `python -m moto.server` on a free local port; yield its URL; stop it afterwards."""
    process, endpoint = on_a_free_port(partial(_start, log_dir / "moto-server.log", timeout))
    try:
        yield endpoint
    finally:
        _stop(process)


def s3_endpoint_fixture(scope: str = "session") -> Callable[..., Iterator[str]]:
    """A pytest fixture yielding the URL of a moto S3 server that lives for `scope`."""

    @pytest.fixture(scope=scope)
    def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
        with moto_server(tmp_path_factory.mktemp("moto")) as endpoint:
            yield endpoint

    return s3_endpoint


def s3_client(endpoint: str) -> Any:
    """A client of the S3 server at `endpoint`, with the test credentials."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_ID,
        aws_secret_access_key=ACCESS_KEY,
        region_name=REGION,
    )


def new_bucket(endpoint: str) -> tuple[Any, str]:
    """A client of the S3 server at `endpoint` and a fresh bucket of its own."""
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    s3 = s3_client(endpoint)
    s3.create_bucket(Bucket=bucket)
    return s3, bucket


def aws_env(endpoint: str) -> dict[str, str]:
    """The standard AWS variables that point boto3 and S3A at the test server."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_ID,
        "AWS_SECRET_ACCESS_KEY": ACCESS_KEY,
        "AWS_REGION": REGION,
    }
