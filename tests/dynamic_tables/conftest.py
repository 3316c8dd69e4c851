"""Fixtures of the dynamic-table tests: the sales source and its category summary, on a lake."""

from __future__ import annotations

import pytest

from lake_assets.session import LakeSession

SALES_ODS = """
CREATE TABLE sales_ods (
    id BIGINT, product STRING, category STRING, amount DECIMAL(10,2), dt STRING
);
INSERT INTO sales_ods VALUES
    (1, 'iPhone 15', 'Electronics', 6999.00, '2026-06-01'),
    (2, 'MacBook Pro', 'Electronics', 14999.00, '2026-06-01'),
    (3, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'),
    (4, 'Adidas Ultraboost', 'Sports', 1299.00, '2026-06-01'),
    (5, 'Kindle', 'Books', 999.00, '2026-06-01');
"""
SUMMARY = """
CREATE OR REPLACE DYNAMIC TABLE sales_summary REFRESH INTERVAL 1 HOUR vcluster DEFAULT
COMMENT 'Category summary — incremental refresh'
AS SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, AVG(amount) AS avg_amount,
MIN(dt) AS min_date, MAX(dt) AS max_date FROM sales_ods GROUP BY category
"""


@pytest.fixture
def summary(lake: LakeSession) -> LakeSession:
    lake.sql(SALES_ODS)
    lake.sql(SUMMARY)
    return lake
