"""The hypothesis settings of the property tests over Spark histories, and the profile every
property test runs under. Each such test runs its explicit examples and a few random histories
(the same ones every run: derandomized), as many as the profile asks: `dev` 2, `thorough` 50
(for exploring before a change lands). CI runs their explicit examples only: a derandomized
history is one more fixed example, and the random ones took about a tenth of a fresh clone's 71
minutes of pytest on 2 cores (2026-12-07), too near CI's 90-minute limit. The property tests
that need no Spark draw one random example in CI."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
settings.register_profile("dev", max_examples=2)
settings.register_profile("ci", max_examples=1)
settings.register_profile("thorough", max_examples=50)
settings.load_profile(PROFILE)

HISTORIES = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    phases=(Phase.explicit,) if PROFILE == "ci" else tuple(Phase),
)
