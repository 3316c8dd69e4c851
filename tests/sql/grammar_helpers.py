"""What the parser's tests share: the sales source's DDL and the error a statement fails with."""

from __future__ import annotations

import pytest

from lake_assets.core.errors import LakeError
from lake_assets.kinds import parse_statement

SALES_SOURCE = """
CREATE TABLE IF NOT EXISTS sales_source (
    id BIGINT COMMENT 'Order ID',
    product STRING COMMENT 'Product name',
    category STRING COMMENT 'Category',
    amount DECIMAL(10,2) COMMENT 'Amount',
    dt STRING COMMENT 'Date'
) COMMENT 'Data lake acceleration test source table'
"""


def parse_error(text: str) -> LakeError:
    with pytest.raises(LakeError) as caught:
        parse_statement(text)
    return caught.value
