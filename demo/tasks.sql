-- Consumers that run by themselves: a task per stream, run by the daemon when its stream has data.
DROP TASK IF EXISTS record_sales;
DROP TASK IF EXISTS record_landed_files;
DROP TABLE STREAM IF EXISTS sales_ods_changes;
DROP TABLE STREAM IF EXISTS landing_files;
DROP TABLE IF EXISTS sales_ods_log;
DROP TABLE IF EXISTS landed_files;

-- Every row the pipe loads into sales_ods, logged once by a task that consumes its stream.
CREATE TABLE STREAM sales_ods_changes ON TABLE sales_ods
    WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
CREATE TABLE sales_ods_log (id BIGINT, category STRING, amount DECIMAL(10,2), change_type STRING);
CREATE TASK record_sales WHEN STREAM_HAS_DATA('sales_ods_changes')
    COMMENT 'Log each row the pipe loads'
AS INSERT INTO sales_ods_log SELECT id, category, amount, __change_type FROM sales_ods_changes;

-- Every file that lands in my_data_vol, recorded once: a volume stream over its directory table.
CREATE STREAM landing_files ON VOLUME my_data_vol
    WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
CREATE TABLE landed_files (relative_path STRING, size BIGINT, last_modified_time TIMESTAMP);
CREATE TASK record_landed_files WHEN STREAM_HAS_DATA('landing_files')
    COMMENT 'Record each file that lands in my_data_vol'
AS INSERT INTO landed_files SELECT relative_path, size, last_modified_time FROM landing_files;

SHOW TASKS;
