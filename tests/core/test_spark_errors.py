"""Spark failures as one line (no JVM: py4j's error is given the text the JVM gives): missing AWS
credentials say where to export them, whichever way S3A and the SDK word it."""

from __future__ import annotations

import pytest
from py4j import protocol

from lake_assets.core.spark_errors import translate_spark_error

SDK = (
    "software.amazon.awssdk.core.exception.SdkClientException: Unable to load credentials from "
    "system settings. Access key must be specified either via environment variable "
    "(AWS_ACCESS_KEY_ID) or system property (aws.accessKeyId)."
)
SDK_FRAMES = (
    "\tat software.amazon.awssdk.core.exception.SdkClientException$BuilderImpl.build"
    "(SdkClientException.java:111)\n"
    "\tat software.amazon.awssdk.auth.credentials.internal.SystemSettingsCredentialsProvider"
    ".resolveCredentials(SystemSettingsCredentialsProvider.java:64)\n"
)
S3A = (
    "org.apache.hadoop.fs.s3a.auth.NoAuthWithAWSException: No AWS Credentials provided by "
    f"EnvironmentVariableCredentialsProvider : {SDK}"
)
# The environment provider alone, on a driver without the variables (as a CREATE TABLE fails).
ON_THE_DRIVER = (
    "An error occurred while calling o71.save.\n"
    f": java.nio.file.AccessDeniedException: s3a://lake/t/_delta_log: {S3A}\n"
    "\tat org.apache.hadoop.fs.s3a.S3AUtils.translateException(S3AUtils.java:212)\n"
    "\tat org.apache.hadoop.fs.s3a.Invoker.once(Invoker.java:124)\n"
    f"Caused by: {S3A}\n"
    "\tat org.apache.hadoop.fs.s3a.AWSCredentialProviderList.resolveCredentials"
    "(AWSCredentialProviderList.java:216)\n"
    f"Caused by: {SDK}\n{SDK_FRAMES}"
)
# An INSERT whose executors lack them: the task's failure, with the SDK's cause only.
ON_AN_EXECUTOR = (
    "An error occurred while calling o123.sql.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 2.0 "
    "failed 4 times, most recent failure: Lost task 0.3 in stage 2.0 (TID 7) (10.0.0.12 "
    f"executor 0): {SDK}\n{SDK_FRAMES}"
    "Driver stacktrace:\n"
    "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages"
    "(DAGScheduler.scala:2935)\n"
    f"Caused by: {SDK}\n{SDK_FRAMES}"
)
UNREACHABLE = (
    "An error occurred while calling o71.save.\n"
    "Caused by: software.amazon.awssdk.core.exception.SdkClientException: Unable to execute "
    "HTTP request: Connect to 127.0.0.1:9 failed: Connection refused\n"
)


class Py4JJavaError(protocol.Py4JJavaError):
    """py4j's error as a failed call raises it, with the JVM's text and no JVM behind it."""

    def __init__(self, text: str) -> None:
        Exception.__init__(self, text)
        self.text = text

    def __str__(self) -> str:
        return self.text


@pytest.mark.parametrize("text", [ON_THE_DRIVER, ON_AN_EXECUTOR], ids=["driver", "executor"])
def test_missing_aws_credentials_say_where_to_export_them(text: str) -> None:
    error = translate_spark_error(Py4JJavaError(text), {})
    assert error is not None
    assert str(error) == (
        "SdkClientException: Unable to load credentials from system settings. Access key must be "
        "specified either via environment variable (AWS_ACCESS_KEY_ID) or system property "
        "(aws.accessKeyId). — give every Spark process AWS credentials: export AWS_ACCESS_KEY_ID "
        "and AWS_SECRET_ACCESS_KEY where the driver and a cluster's workers start (executors "
        "inherit the worker's environment), or give the machines an instance role"
    )


def test_another_sdk_failure_keeps_its_own_words() -> None:
    error = translate_spark_error(Py4JJavaError(UNREACHABLE), {})
    assert error is not None
    assert error.what.startswith("SdkClientException: Unable to execute HTTP request")
    assert error.fix == "run again with --debug to see Spark's full error"
