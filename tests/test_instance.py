"""The embedded Dagster instance that `make dev` and the demo use (dagster_home/dagster.yaml)."""

from __future__ import annotations

import shutil
from pathlib import Path

from dagster import DagsterInstance

DAGSTER_YAML = Path(__file__).resolve().parents[1] / "dagster_home" / "dagster.yaml"


def test_the_ui_opens_without_the_onboarding_dialog(tmp_path: Path) -> None:
    shutil.copy(DAGSTER_YAML, tmp_path / "dagster.yaml")
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        assert not instance.nux_enabled
        assert not instance.telemetry_enabled
