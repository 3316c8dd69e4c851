-- The table part of the sales walkthrough: create, insert, update, merge, query.
DROP TABLE IF EXISTS sales_source;

CREATE TABLE IF NOT EXISTS sales_source (
    id BIGINT COMMENT 'Order ID',
    product STRING COMMENT 'Product name',
    category STRING COMMENT 'Category',
    amount DECIMAL(10,2) COMMENT 'Amount',
    dt STRING COMMENT 'Date'
) COMMENT 'Data lake acceleration test source table';

INSERT INTO sales_source VALUES
    (1, 'iPhone 15', 'Electronics', 8999.00, '2026-06-01'),
    (2, 'MacBook Pro', 'Electronics', 14999.00, '2026-06-01'),
    (3, 'AirPods', 'Electronics', 1299.00, '2026-06-01'),
    (4, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'),
    (5, 'Yoga Mat', 'Sports', 199.00, '2026-06-01');

-- A 10% price rise on Sports goods ...
UPDATE sales_source SET amount = amount * 1.10 WHERE category = 'Sports';

-- ... is undone by merging the authoritative price list (an upsert: update matches, insert the rest).
MERGE INTO sales_source t
USING (SELECT * FROM VALUES (4, 'Nike Air Max', 'Sports', 899.00, '2026-06-01'),
                            (5, 'Yoga Mat', 'Sports', 199.00, '2026-06-01')
       AS prices(id, product, category, amount, dt)) s
ON t.id = s.id
WHEN MATCHED AND t.amount <> s.amount THEN UPDATE SET t.amount = s.amount
WHEN NOT MATCHED THEN INSERT *;

SELECT * FROM sales_source ORDER BY id;

SELECT category, COUNT(*) AS orders, SUM(amount) AS total_amount
FROM sales_source GROUP BY category ORDER BY category;

DESC HISTORY sales_source;
