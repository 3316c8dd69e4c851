"""Spark failures as one line (no JVM: py4j's error is given the text the JVM gives): missing AWS
credentials say where to export them, whichever way S3A and the SDK word it; what a failure says
happened, and the one retry loop."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from py4j import protocol

from lake_assets.core import spark_errors
from lake_assets.core.errors import SEE_THE_CAUSE
from lake_assets.core.spark_errors import (
    Failure,
    as_lake_error,
    classify,
    retrying,
    translate_spark_error,
)

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
    assert error.fix == SEE_THE_CAUSE  # true in `lake sql`, in Python and in a Dagster run


def test_spark_running_out_of_stack_on_a_deep_statement_is_one_line() -> None:
    text = (
        "An error occurred while calling o66.sql.\n: java.lang.StackOverflowError\n"
        "\tat org.antlr.v4.runtime.misc.Array2DHashSet.getOrAdd(Array2DHashSet.java:63)\n"
    )
    error = translate_spark_error(Py4JJavaError(text), {})
    assert error is not None
    assert error.what == "StackOverflowError"
    assert error.fix.startswith("the statement nests deeper than Spark's parser goes: split it")


def test_a_runs_spark_failure_names_the_relation_at_its_location() -> None:
    text = (
        "An error occurred while calling o90.sql.\n: org.apache.spark.sql.AnalysisException: "
        "[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NULL value appeared in non-nullable field "
        "of `delta`.`/lake/warehouse/orders`\n"
    )
    error = as_lake_error(Py4JJavaError(text), {"/lake/warehouse/orders": "orders"})
    assert error.what == (
        "[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NULL value appeared in non-nullable field of orders"
    )
    assert error.fix == "give the column a value"


@pytest.mark.parametrize(
    ("error", "what"),
    [
        (ValueError("bad value\n  more detail"), "bad value"),
        (AssertionError(), "AssertionError"),  # no text: an IndexError would hide it
    ],
)
def test_a_runs_other_failure_is_its_first_line_with_the_cause_to_read(
    error: Exception, what: str
) -> None:
    assert (as_lake_error(error, {}).what, as_lake_error(error, {}).fix) == (what, SEE_THE_CAUSE)


@pytest.mark.parametrize(
    ("text", "failure"),
    [
        ("[DELTA_CONCURRENT_APPEND.WITHOUT_HINT] Files were added", "LOST_APPEND_RACE|CONCURRENT"),
        ("[DELTA_CONCURRENT_TRANSACTION] This error occurs", "LOST_FENCE|CONCURRENT"),
        ("[DELTA_CONCURRENT_DELETE_READ] t", "CONCURRENT"),
        ("[DELTA_METADATA_CHANGED] MetadataChangedException", "LOST_METADATA_RACE|CONCURRENT"),
        ("java.io.IOException: storage did not answer", "UNAVAILABLE"),
        ("IOException: java.io.FileNotFoundException: part-0", "UNAVAILABLE|FILE_MISSING"),
        ("[FAILED_READ_FILE.FILE_NOT_FOUND] gone", "FILE_MISSING"),
        ("[DIVIDE_BY_ZERO] Division by zero", "NONE"),
    ],
)
def test_a_failure_is_classified_by_its_text(text: str, failure: str) -> None:
    expected = Failure.NONE
    for name in failure.split("|"):
        expected |= Failure[name]
    assert classify(Py4JJavaError(text)) == expected
    assert classify(RuntimeError(text)) == expected


def test_transient_failures_are_lost_races_and_storage_without_a_missing_file() -> None:
    assert classify(RuntimeError("[DELTA_CONCURRENT_DELETE_READ] t")).transient
    assert classify(RuntimeError("SocketTimeoutException: Read timed out")).transient
    assert not classify(RuntimeError("IOException: java.io.FileNotFoundException: x")).transient
    assert not classify(RuntimeError("[DIVIDE_BY_ZERO]")).transient


def test_a_lost_race_to_a_change_of_metadata_says_to_run_it_again() -> None:
    error = Py4JJavaError(
        "An error occurred while calling o90.save.\n"
        ": org.apache.spark.sql.delta.MetadataChangedException: [DELTA_METADATA_CHANGED] "
        "MetadataChangedException: The metadata of the Delta table has been changed by a "
        "concurrent update. Please try the operation again."
    )
    assert as_lake_error(error, {}).fix == (
        "another statement changed the table's columns or properties at the same moment; "
        "run it again"
    )


def failing(texts: list[str], calls: list[str]) -> Callable[[], str]:
    """An action that fails with each text in turn, then returns "done"."""

    def action() -> str:
        calls.append("try")
        if len(calls) <= len(texts):
            raise Py4JJavaError(texts[len(calls) - 1])
        return "done"

    return action


def test_retrying_tries_again_what_it_is_told_waiting_twice_as_long_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(spark_errors.time, "sleep", waits.append)
    race = "[DELTA_CONCURRENT_APPEND] t"
    calls: list[str] = []
    done = retrying(
        failing([race] * 3, calls),
        when=lambda failure: Failure.LOST_APPEND_RACE in failure,
        attempts=4,
        first_wait=0.5,
        longest_wait=1.5,
    )
    assert (done, len(calls), waits) == ("done", 4, [0.5, 1.0, 1.5])

    calls.clear()
    with pytest.raises(Py4JJavaError, match="DELTA_CONCURRENT_APPEND"):
        retrying(failing([race] * 4, calls), when=lambda _: True, attempts=4, first_wait=0)
    assert len(calls) == 4  # the last try's failure propagates as raised

    calls.clear()
    with pytest.raises(Py4JJavaError, match="DIVIDE_BY_ZERO"):
        retrying(
            failing(["[DIVIDE_BY_ZERO]"], calls),
            when=lambda f: f.transient,
            attempts=4,
            first_wait=0,
        )
    assert len(calls) == 1


def test_retrying_leaves_other_exceptions_alone() -> None:
    calls: list[str] = []

    def action() -> None:
        calls.append("try")
        raise ValueError("java.io.IOException")

    with pytest.raises(ValueError, match="IOException"):
        retrying(action, when=lambda _: True, attempts=3, first_wait=0, errors=(KeyError,))
    assert len(calls) == 1
