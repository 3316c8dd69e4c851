"""Whether an expression's value is decided by its arguments alone: a condition that judges a row
(a table's expectation) may call only such functions."""

from __future__ import annotations

from sqlglot import exp

# Functions sqlglot leaves anonymous whose value is not decided by their arguments: Spark's
# random and row-position functions, the clock and the session, and calls into Java methods.
_NAMES = {
    "rand", "random", "randn", "uuid", "now", "current_timestamp", "current_date",
    "localtimestamp", "unix_timestamp", "monotonically_increasing_id", "spark_partition_id",
    "input_file_name", "input_file_block_start", "input_file_block_length", "shuffle",
    "current_user", "session_user", "user", "current_time", "reflect", "java_method",
    "try_reflect", "getdate", "sysdate",
}  # fmt: skip
# Every class of sqlglot's expressions whose value is not decided by its arguments: random
# values, the time of the run, the session, account or server it runs in, and calls of models.
NON_DETERMINISTIC: tuple[type[exp.Func], ...] = (
    # random
    exp.Rand, exp.Randn, exp.Randstr, exp.Uniform, exp.Normal, exp.Zipf, exp.Uuid, exp.Shuffle,
    exp.Seq1, exp.Seq2, exp.Seq4, exp.Seq8, exp.NextValueFor,
    # the time of the run
    exp.CurrentDate, exp.CurrentDatetime, exp.CurrentTime, exp.CurrentTimestamp,
    exp.CurrentTimestampLTZ, exp.Localtime, exp.Localtimestamp, exp.Systimestamp, exp.UtcDate,
    exp.UtcTime, exp.UtcTimestamp,
    # the session, account or server
    exp.CurrentAccount, exp.CurrentAccountName, exp.CurrentAvailableRoles, exp.CurrentCatalog,
    exp.CurrentClient, exp.CurrentDatabase, exp.CurrentIpAddress, exp.CurrentOrganizationName,
    exp.CurrentOrganizationUser, exp.CurrentRegion, exp.CurrentRole, exp.CurrentRoleType,
    exp.CurrentSchema, exp.CurrentSchemas, exp.CurrentSecondaryRoles, exp.CurrentSession,
    exp.CurrentStatement, exp.CurrentTimezone, exp.CurrentTransaction, exp.CurrentUser,
    exp.CurrentUserId, exp.CurrentVersion, exp.CurrentWarehouse, exp.SessionUser, exp.Secret,
    # calls of models
    exp.AIAgg, exp.AIClassify, exp.AIEmbed, exp.AIForecast, exp.AIGenerate, exp.AISimilarity,
    exp.AISummarizeAgg, exp.MLForecast, exp.MLTranslate, exp.Predict, exp.GenerateBool,
    exp.GenerateDouble, exp.GenerateEmbedding, exp.GenerateInt, exp.GenerateTable,
    exp.GenerateText, exp.VectorSearch,
)  # fmt: skip


def non_deterministic(node: exp.Expr) -> bool:
    """Whether `node` (one node, not its children) reads chance, the clock or the session."""
    return isinstance(node, NON_DETERMINISTIC) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in _NAMES
    )
