"""Storage tests use the session-wide moto S3 server `s3_endpoint` defined in tests/conftest.py."""
