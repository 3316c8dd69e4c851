-- The sales walkthrough, step 3: a dynamic table that keeps a summary of the pipe's table.
-- Change tracking on the source is what lets the refresh read only the changes.
ALTER TABLE sales_ods SET PROPERTIES ('change_tracking' = 'true');

-- Its expectation: every category's total is positive (sales_ods keeps refunds out). A WARN: a
-- refresh that adds a failing row commits it and counts it; Dagster shows the check.
CREATE OR REPLACE DYNAMIC TABLE sales_summary (category, order_cnt, total_amount, avg_amount,
        min_date, max_date, CONSTRAINT positive_total EXPECT (total_amount > 0))
    REFRESH INTERVAL 1 HOUR VCLUSTER DEFAULT
    COMMENT 'Category summary — incremental refresh'
AS SELECT category, COUNT(*) AS order_cnt, SUM(amount) AS total_amount, AVG(amount) AS avg_amount,
          MIN(dt) AS min_date, MAX(dt) AS max_date
   FROM sales_ods GROUP BY category;

-- A target lag instead of the hourly interval: the daemon refreshes it once it falls 30 s behind
-- sales_ods (half its target), so it is never a minute behind; Dagster shows it fresh or late.
ALTER DYNAMIC TABLE sales_summary SET TARGET_LAG = '1 minute';

-- The first refresh sets the baseline; from here on the daemon refreshes it by itself.
REFRESH DYNAMIC TABLE sales_summary;
DESC DYNAMIC TABLE sales_summary;
