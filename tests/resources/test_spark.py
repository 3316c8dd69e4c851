"""The Spark configuration a lake session starts with (no JVM)."""

from __future__ import annotations

import os
from pathlib import Path

from lake_assets.core.settings import LakeSettings
from resources.spark import local_cores, spark_conf


def test_a_local_master_names_its_cores_and_a_cluster_does_not() -> None:
    assert local_cores("local") == 1
    assert local_cores("local[3]") == 3
    assert local_cores("local[2, 4]") == 2
    assert local_cores("local[*]") == os.cpu_count()
    assert local_cores("spark://host:7077") is None
    assert local_cores("local-cluster[2,1,1024]") is None


def test_the_cores_are_readable_as_default_parallelism_unless_overridden(tmp_path: Path) -> None:
    """Incremental refreshes read it to plan one shuffle partition per core."""
    local = spark_conf(LakeSettings(lake_home=tmp_path, spark_master="local[3]"))
    assert local["spark.default.parallelism"] == "3"
    cluster = spark_conf(LakeSettings(lake_home=tmp_path, spark_master="spark://host:7077"))
    assert "spark.default.parallelism" not in cluster
    chosen = LakeSettings(
        lake_home=tmp_path, spark_master="local[3]", spark_conf={"spark.default.parallelism": "8"}
    )
    assert spark_conf(chosen)["spark.default.parallelism"] == "8"
