"""Fixtures for storage tests: a moto S3 server in its own process, for the whole session."""

from __future__ import annotations

from tests.s3_server import s3_endpoint_fixture

s3_endpoint = s3_endpoint_fixture(scope="session")
