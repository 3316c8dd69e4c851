-- The sales walkthrough, step 2, on a LOCAL volume under dagster_home/demo-files.
-- ${FILES} is replaced by demo/walkthrough.py with that folder's absolute path.
DROP DYNAMIC TABLE IF EXISTS sales_summary; -- reads sales_ods (demo/dynamic.sql)
DROP PIPE IF EXISTS sales_pipe;
DROP VOLUME IF EXISTS pipe_vol;
DROP VOLUME IF EXISTS my_data_vol;
DROP TABLE IF EXISTS sales_ods;
DROP STORAGE CONNECTION IF EXISTS my_local_conn;

-- 2a. The storage connection (LOCAL here; TYPE S3/OSS/COS with ENDPOINT and keys for buckets).
CREATE STORAGE CONNECTION IF NOT EXISTS my_local_conn TYPE LOCAL;

-- 2b. Mount a directory as a volume.
CREATE EXTERNAL VOLUME IF NOT EXISTS my_data_vol LOCATION 'file://${FILES}/data/'
    USING CONNECTION my_local_conn DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = FALSE)
    RECURSIVE = TRUE COMMENT 'Dedicated Volume for data lake acceleration';

-- 2c. Export the source table to the volume as CSV and Parquet.
COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source FILE_FORMAT = (TYPE = CSV);
COPY INTO VOLUME my_data_vol SUBDIRECTORY 'export/' FROM TABLE sales_source FILE_FORMAT = (TYPE = PARQUET);

-- 2d. Read the files back.
ALTER VOLUME my_data_vol REFRESH;
SELECT relative_path, size, last_modified_time FROM DIRECTORY(VOLUME my_data_vol)
WHERE relative_path LIKE 'export/%' ORDER BY relative_path;
SELECT * FROM VOLUME my_data_vol USING CSV FILES('export/part00001.csv');
SELECT id, product, category, amount, dt FROM VOLUME my_data_vol USING PARQUET FILES('export/part00001.parquet');

-- 2e. A dedicated volume, the ODS table and the pipe that feeds it.
CREATE EXTERNAL VOLUME IF NOT EXISTS pipe_vol LOCATION 'file://${FILES}/incoming/'
    USING CONNECTION my_local_conn DIRECTORY = (ENABLE = TRUE, AUTO_REFRESH = TRUE)
    RECURSIVE = TRUE COMMENT 'Dedicated Volume for Pipe continuous ingestion';
CREATE TABLE IF NOT EXISTS sales_ods (
    id BIGINT COMMENT 'Order ID', product STRING COMMENT 'Product name',
    category STRING COMMENT 'Category', amount DECIMAL(10,2) COMMENT 'Amount', dt STRING COMMENT 'Date'
) COMMENT 'ODS layer — Pipe ingestion target table';
-- An order's amount must be positive: a row that is not stays out of sales_ods, in its quarantine
-- (SELECT * FROM quarantined_rows('sales_ods')), and the load counts it.
ALTER TABLE sales_ods ADD CONSTRAINT positive_amount EXPECT (amount > 0) ON VIOLATION DROP ROW;
CREATE PIPE IF NOT EXISTS sales_pipe INGEST_MODE = 'LIST_PURGE' VIRTUAL_CLUSTER = 'DEFAULT'
    POLL_INTERVAL = 5 COMMENT 'Sales data continuous ingestion pipeline'
    AS COPY INTO sales_ods FROM VOLUME pipe_vol USING CSV PURGE = TRUE;
DESC PIPE EXTENDED sales_pipe;
