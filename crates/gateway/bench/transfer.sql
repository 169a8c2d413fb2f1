\set a random(1, 1000)
\set b random(1, 1000)
\set d random(1, 100)
BEGIN;
UPDATE bench_accounts SET balance = balance - :d WHERE id = :a;
UPDATE bench_accounts SET balance = balance + :d WHERE id = :b;
SELECT balance FROM bench_accounts WHERE id = :a;
COMMIT;
