-- Two table stream examples, APPEND_ONLY and STANDARD, after the clean-up of an earlier run.
DROP TABLE STREAM IF EXISTS test_stream;
DROP TABLE STREAM IF EXISTS test_table_offset_stream;
DROP TABLE IF EXISTS test_table;
DROP TABLE IF EXISTS test_table_offset;
DROP TABLE IF EXISTS test_table_offset_consume;

-- APPEND_ONLY: the stream keeps showing the rows as they were inserted.
CREATE TABLE test_table (id INT, name VARCHAR, age INT);
ALTER table test_table set PROPERTIES ('change_tracking' = 'true');
CREATE table stream test_stream ON TABLE test_table WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
INSERT INTO test_table VALUES (1, 'Alice', 20), (2, 'Bob', 25), (3, 'Charlie', 30), (4, 'David', 35), (5, 'Eve', 40);
SELECT * FROM test_stream;
UPDATE test_table SET age = age + 5 WHERE id = 1 OR id = 3;
SELECT * FROM test_stream;
DELETE FROM test_table WHERE id = 2 OR id = 4;
SELECT * FROM test_stream;
DELETE FROM test_table;
SELECT * FROM test_stream;

-- STANDARD: consumers move the offset; SELECTs do not.
CREATE TABLE test_table_offset (id INT, name VARCHAR, age INT);
ALTER TABLE test_table_offset set PROPERTIES ('change_tracking' = 'true');
CREATE table stream test_table_offset_stream ON TABLE test_table_offset WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO test_table_offset VALUES (1, 'Alice', 20), (2, 'Bob', 25), (3, 'Charlie', 30), (4, 'David', 35), (5, 'Eve', 40);
CREATE TABLE test_table_offset_consume (id INT, name VARCHAR, age INT);
INSERT INTO test_table_offset_consume SELECT id,name,age FROM test_table_offset_stream;
SELECT * FROM test_table_offset_stream;
UPDATE test_table_offset SET age = age + 5 WHERE id = 1 OR id = 3;
SELECT * FROM test_table_offset_stream;
MERGE INTO test_table_offset_consume target USING test_table_offset_stream source_stream ON target.id = source_stream.id WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' THEN update set target.age = source_stream.age WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' THEN INSERT VALUES (source_stream.id, source_stream.name, source_stream.age);
SELECT * FROM test_table_offset_consume;
SELECT * FROM test_table_offset_stream;
DELETE FROM test_table_offset WHERE id = 2 OR id = 4;
SELECT * FROM test_table_offset_stream;
MERGE INTO test_table_offset_consume target USING test_table_offset_stream source_stream ON target.id = source_stream.id WHEN MATCHED AND source_stream.__change_type = 'UPDATE_AFTER' THEN update set target.age = source_stream.age WHEN MATCHED AND source_stream.__change_type = 'DELETE' THEN DELETE WHEN NOT MATCHED AND source_stream.__change_type = 'INSERT' THEN INSERT VALUES (source_stream.id, source_stream.name, source_stream.age);
SELECT * FROM test_table_offset_consume;
SELECT * FROM test_table_offset_stream;
DESC STREAM test_table_offset_stream;
