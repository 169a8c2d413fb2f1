//! Differential test against the machine's PostgreSQL (127.0.0.1:5432, database `test`, user
//! `$USER` or `postgres`, trust authentication): a bounded set of statements, written here or
//! generated from operands of every supported type, runs on a standalone `Database` and on
//! PostgreSQL, and the two must agree on the result types (PostgreSQL's row description), the
//! values (text forms, normalized: numeric scale, float text, booleans, CHAR padding), or the
//! SQLSTATE of the error. Statements where Pistou is known to differ are listed in `KNOWN`
//! with the reason; they must still differ (a fixed one is to be removed from the list).
//!
//! The client and the normalization are in `common/mod.rs`, shared with
//! `random_differential.rs`. PostgreSQL runs on every machine of the project, CI included: an
//! unreachable server fails the test instead of skipping it.

mod common;

use common::{on_pistou, on_postgres, pg};
use pistou_sql::Database;
use std::time::Instant;

/// Operands of every supported type, including PostgreSQL's untyped literals.
const OPERANDS: &[&str] = &[
    "1",
    "2147483648",
    "CAST(3 AS SMALLINT)",
    "CAST(7 AS BIGINT)",
    "1.5",
    "CAST(2.5 AS REAL)",
    "CAST(0.1 AS DOUBLE PRECISION)",
    "'3'",
    "'abc'",
    "NULL",
    "CAST('x' AS TEXT)",
    "CAST('y ' AS VARCHAR(5))",
    "CAST('z' AS CHAR(3))",
    "DATE '2020-01-02'",
    "TIMESTAMP '2020-01-02 03:04:05'",
    "TRUE",
];

/// Statements over two operands.
const TEMPLATES: &[&str] = &[
    "SELECT CASE WHEN 1 = 0 THEN {a} ELSE {b} END",
    "SELECT COALESCE({a}, {b})",
    "SELECT NULLIF({a}, {b})",
    "SELECT GREATEST({a}, {b})",
    "SELECT LEAST({a}, {b})",
    "SELECT {a} UNION SELECT {b}",
    "SELECT {a} EXCEPT SELECT {b}",
    "VALUES ({a}), ({b})",
    "SELECT {a} + {b}",
    "SELECT {a} / {b}",
    "SELECT {a} = {b}",
];

/// A table with a column of every supported type (row 1 with values, row 2 with NULLs), and
/// the templates run over pairs of its columns: static types from the catalog.
const COLUMNS_TABLE: &str = "CREATE TABLE dc (id INT PRIMARY KEY, i2 SMALLINT, i4 INT, i8 BIGINT, n NUMERIC(8,3), r REAL, f DOUBLE PRECISION, t TEXT, v VARCHAR(5), c CHAR(3), d DATE, ts TIMESTAMP, b BOOLEAN)";
const COLUMNS_ROWS: &str = "INSERT INTO dc VALUES (1, 3, 40, 5000000000, 12.5, 0.25, 1.75, 'x', 'y ', 'z', DATE '2020-01-02', TIMESTAMP '2020-01-02 03:04:05', TRUE), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)";
const COLUMNS: &[&str] = &["i2", "i4", "i8", "n", "r", "f", "t", "v", "c", "d", "ts", "b", "'7'", "NULL"];
const COLUMN_TEMPLATES: &[&str] = &[
    "SELECT id, CASE WHEN id = 1 THEN {a} ELSE {b} END FROM dc",
    "SELECT id, COALESCE({a}, {b}) FROM dc",
    "SELECT id, NULLIF({a}, {b}) FROM dc",
    "SELECT id, GREATEST({a}, {b}) FROM dc",
    "SELECT {a} FROM dc UNION SELECT {b} FROM dc",
    "SELECT id, {a} - {b} FROM dc",
    "SELECT id, {a} < {b} FROM dc",
];

/// Statements written out: the issue's cases, arithmetic over resolved types, quoted literals
/// assigned to and compared with columns, laziness, nesting. Run in order on one database.
const STATEMENTS: &[&str] = &[
    "SELECT CASE WHEN 1 = 0 THEN 1.5 ELSE 15 END / 77",
    "SELECT NULLIF(53, 1.5) / 2",
    "SELECT COALESCE(1, 1/0)",
    "SELECT COALESCE(NULL, 2, 1/0)",
    "SELECT COALESCE(1/0, 1)",
    "SELECT CASE WHEN 1 = 1 THEN 1 ELSE 1.5 END / 2",
    "SELECT CASE WHEN 1 = 1 THEN 1 WHEN 1 = 2 THEN 2.5 ELSE CAST(1 AS REAL) END",
    "SELECT CASE WHEN 1 = 1 THEN CAST(1 AS SMALLINT) ELSE CAST(2 AS BIGINT) END",
    "SELECT CASE WHEN 1 = 1 THEN 'a' END",
    "SELECT CASE WHEN 1 = 1 THEN NULL END",
    "SELECT CASE WHEN 1 = 1 THEN NULL ELSE 2 END",
    "SELECT CASE WHEN 1 = 1 THEN '7' ELSE 2 END + 1",
    "SELECT CASE WHEN 1 = 1 THEN 1 ELSE 'abc' END",
    "SELECT CASE 1 WHEN '1' THEN 'one' ELSE 'other' END",
    "SELECT CASE 1 WHEN 1.0 THEN 'one' ELSE 'other' END",
    "SELECT CASE 1 WHEN 'x' THEN 'one' ELSE 'other' END",
    "SELECT CASE WHEN 1 = 1 THEN CAST('a' AS VARCHAR(3)) ELSE CAST('b' AS CHAR(2)) END",
    "SELECT CASE WHEN 1 = 1 THEN CAST('a' AS CHAR(2)) ELSE CAST('b' AS VARCHAR(3)) END",
    "SELECT COALESCE(NULL, NULL)",
    "SELECT COALESCE(NULL, 1, 2.5) / 3",
    "SELECT COALESCE('5', 2) * 2",
    "SELECT GREATEST(1, 2.5, CAST(3 AS REAL))",
    "SELECT LEAST(2, 1.5) * 2",
    "SELECT GREATEST('a', 'b')",
    "SELECT GREATEST(1, '7')",
    "SELECT NULLIF('3', 3)",
    "SELECT NULLIF(3, '3')",
    "SELECT NULLIF(1, 'x')",
    "SELECT NULLIF('a', 'b')",
    "SELECT NULLIF(CAST(1 AS REAL), 1.5)",
    "SELECT NULLIF(1.5, CAST(1 AS REAL))",
    "SELECT NULLIF(CAST(1 AS SMALLINT), CAST(1 AS BIGINT))",
    "SELECT NULLIF(CAST('a' AS VARCHAR(3)), 'b')",
    "SELECT NULLIF(CAST('a' AS CHAR(3)), 'a')",
    "SELECT NULLIF(DATE '2020-01-01', TIMESTAMP '2020-01-01 00:00:00')",
    "SELECT 1 UNION SELECT 1.0",
    "SELECT 1.5 UNION ALL SELECT 1 UNION ALL SELECT CAST(2 AS BIGINT)",
    "SELECT '1' UNION SELECT '2' UNION SELECT 3",
    "SELECT '1' UNION SELECT 2 UNION SELECT '3'",
    "SELECT 1, 'a' UNION SELECT 2.5, 'b'",
    "SELECT NULL UNION SELECT NULL",
    "SELECT 1 INTERSECT SELECT 1.0",
    "SELECT 2 EXCEPT SELECT '2'",
    "VALUES (1, 'a'), (2.5, NULL), (NULL, 'c')",
    "VALUES ('1'), ('x')",
    "VALUES (NULL), (NULL)",
    "SELECT 1 UNION VALUES ('2')",
    "SELECT x / 2 FROM (VALUES (1), (2.5)) AS v (x)",
    "SELECT x / 2 FROM (SELECT 3 UNION SELECT 1.5) AS u (x)",
    "SELECT 1 + '2'",
    "SELECT '1.5' + 1",
    "SELECT 2.5 * '2'",
    "SELECT '2' + '3'",
    "SELECT 1 = '1'",
    "SELECT '1' = 1.5",
    "SELECT 1 IN ('1', 2)",
    "SELECT '1' IN (1, 2)",
    "SELECT 1 IN (1.0, 2)",
    "SELECT 3 BETWEEN '1' AND '5'",
    "SELECT 1 IS DISTINCT FROM '1'",
    "SELECT 'a' IN ('a', 'b')",
    "SELECT NULLIF(1, 1.0)",
    "SELECT CASE WHEN 1 = 1 THEN CASE WHEN 1 = 1 THEN '1' END ELSE 2 END",
    "SELECT COALESCE('1', '2') + 1",
    "SELECT x FROM (SELECT '1') AS s (x) UNION SELECT 2",
    "SELECT x, count(*) FROM (SELECT 1 UNION ALL SELECT 1.0 UNION ALL SELECT 1.00) AS s (x) GROUP BY x",
    "SELECT * FROM (VALUES (1, 'a'), (2.5, 'b')) AS v (x, y) ORDER BY x",
    "SELECT 1 IN (SELECT 1.5 UNION SELECT 1)",
    "SELECT GREATEST(NULL, NULL)",
    "SELECT LEAST(1, NULL, 0.5)",
    "SELECT CAST(1 AS SMALLINT) + CAST(1 AS SMALLINT)",
    "SELECT CAST(1.5 AS REAL) % 1",
    "SELECT DATE '2020-01-01' - '2019-12-01'",
    "SELECT DATE '2020-01-01' + CAST(1 AS BIGINT)",
    "CREATE TABLE dt (id INT PRIMARY KEY, s SMALLINT, n NUMERIC(6,2), r REAL, v VARCHAR(3), c CHAR(3), d DATE, b BOOLEAN, x INT DEFAULT '7')",
    "INSERT INTO dt (id, s, n, r, v, c, d, b) VALUES ('3', '2', '1.255', '0.1', 'ab ', 'a', '2020-02-03', 'yes')",
    "INSERT INTO dt (id, n) VALUES ('4', '1.5'), (5, 2)",
    "INSERT INTO dt (id) VALUES ('abc')",
    "INSERT INTO dt (id) VALUES ('99999999999')",
    "INSERT INTO dt (id, v) VALUES (10, 'abcdef')",
    "INSERT INTO dt (id, v) VALUES (10, 'ab   ')",
    "INSERT INTO dt (id) SELECT '11'",
    "INSERT INTO dt (id) SELECT '12' UNION SELECT '13'",
    "INSERT INTO dt (id, d) VALUES (14, 'not a date')",
    "UPDATE dt SET n = '2.25', r = '1e3', b = 'no' WHERE id = '4'",
    "UPDATE dt SET s = 'x' WHERE id = 4",
    "INSERT INTO dt (id) VALUES (3) ON CONFLICT (id) DO UPDATE SET n = '9.5'",
    "SELECT * FROM dt",
    "SELECT id FROM dt WHERE id = '3'",
    "SELECT id FROM dt WHERE '3' = id",
    "SELECT id FROM dt WHERE id IN ('3', '4')",
    "SELECT id FROM dt WHERE id BETWEEN '3' AND '4'",
    "SELECT id FROM dt WHERE id = '3.5'",
    "SELECT id FROM dt WHERE d = '2020-02-03'",
    "SELECT id FROM dt WHERE b = 'yes'",
    "SELECT id FROM dt WHERE c = 'a  '",
    "SELECT id FROM dt WHERE r = '0.1'",
    "SELECT id FROM dt WHERE n = '9.50'",
    "SELECT id, s + '1', n * '2' FROM dt WHERE id = 3",
    "SELECT CASE id WHEN '3' THEN 'three' ELSE 'other' END FROM dt",
    "SELECT COALESCE(s, n) FROM dt",
    "SELECT COALESCE(n, s) / 3 FROM dt WHERE id = 3",
    "SELECT GREATEST(s, r, 0) FROM dt",
    "SELECT NULLIF(s, 2) FROM dt",
    "SELECT s FROM dt UNION SELECT n FROM dt",
    "SELECT v FROM dt UNION SELECT c FROM dt",
    "SELECT c FROM dt UNION SELECT 'q'",
    "SELECT d FROM dt UNION SELECT '2021-01-01'",
    "SELECT d FROM dt UNION SELECT TIMESTAMP '2021-01-01 10:00:00'",
    "SELECT COALESCE(x, 1 / 0) FROM dt",
    "SELECT id FROM dt WHERE COALESCE(n, 0) = 0",
    "SELECT x FROM dt WHERE id = 3",
    "SELECT id FROM dt WHERE s = '2' AND v = 'ab ' AND c = 'a'",
    "SELECT id FROM dt WHERE v = 'ab'",
    "SELECT id FROM dt WHERE v || 'x' = 'ab x'",
    "SELECT id FROM dt WHERE id = 3 AND 'x' = 1",
    "SELECT id FROM dt WHERE d = TIMESTAMP '2020-02-03 00:00:00'",
    "SELECT id FROM dt WHERE d < '2020-02-04' ORDER BY id",
    "DELETE FROM dt WHERE id IN ('10', '11')",
    "SELECT count(*) FROM dt",
    // Found by random_differential.rs: round, floor and ceil of integers are double precision
    // (round(x, n) numeric), round(double precision, n) does not exist, floats round to
    // integers half to even (rint), min/max of varchar are text.
    "SELECT floor(1), ceil(CAST(2 AS SMALLINT)), round(7), round(CAST(7 AS BIGINT), 1), floor(CAST(1.5 AS REAL))",
    "SELECT round(CAST(2.5 AS DOUBLE PRECISION)), round(CAST(-2.5 AS DOUBLE PRECISION)), round(CAST(3.5 AS REAL))",
    "SELECT round(CAST(2.5 AS DOUBLE PRECISION), 1)",
    "SELECT round(CAST(2.5 AS REAL), 0)",
    "SELECT CAST(CAST(2.5 AS DOUBLE PRECISION) AS INT), CAST(CAST(-3.5 AS DOUBLE PRECISION) AS BIGINT), CAST(CAST(0.5 AS REAL) AS SMALLINT)",
    "SELECT round(s), floor(n), ceil(r), round(x, 1) FROM dt WHERE id = 3",
    "SELECT max(v), min(v), max(c) FROM dt",
    // ON CONFLICT (cols) DO NOTHING skips conflicts on that constraint only.
    "CREATE TABLE doc (id INT PRIMARY KEY, u INT UNIQUE, x INT)",
    "INSERT INTO doc VALUES (1, 1, 1)",
    "INSERT INTO doc VALUES (2, 1, 2) ON CONFLICT (id) DO NOTHING",
    "INSERT INTO doc VALUES (1, 5, 3) ON CONFLICT (u) DO NOTHING",
    "INSERT INTO doc VALUES (1, 1, 4), (3, 3, 4) ON CONFLICT (u) DO NOTHING",
    "INSERT INTO doc VALUES (1, 1, 5), (4, 4, 5) ON CONFLICT (id) DO NOTHING",
    "INSERT INTO doc VALUES (5, 4, 6), (6, 6, 6) ON CONFLICT DO NOTHING",
    "INSERT INTO doc VALUES (7, 7, 7) ON CONFLICT (x) DO NOTHING",
    "INSERT INTO doc VALUES (8, 8, 8), (9, 8, 9) ON CONFLICT (u) DO NOTHING",
    "SELECT * FROM doc",
    "UPDATE doc SET x = CAST(2.5 AS DOUBLE PRECISION) WHERE id = 1",
    "SELECT x FROM doc WHERE id = 1",
    // A negated literal is typed after the negation; numeric has no negative zero.
    "SELECT -9223372036854775808, -(9223372036854775808), -2147483648, -9223372036854775808.0",
    "SELECT -CAST(0 AS NUMERIC), -(0.0), 0 * -1.5, round(-0.4)",
    "SELECT n, -n FROM dt WHERE id = 5",
    "UPDATE dt SET n = -0.001 WHERE id = 5",
    "SELECT n, -n FROM dt WHERE id = 5",
    // RIGHT and FULL joins: unmatched rows of either side null-extended, ON conjuncts on one
    // side never filtering that side's rows away, WHERE applied to the joined rows.
    "CREATE TABLE jl (id INT PRIMARY KEY, k INT, v TEXT)",
    "CREATE TABLE jr (id INT PRIMARY KEY, k INT, w TEXT)",
    "INSERT INTO jl VALUES (1, 10, 'a'), (2, 20, 'b'), (3, NULL, 'c'), (4, 20, 'd')",
    "INSERT INTO jr VALUES (1, 20, 'x'), (2, 30, 'y'), (3, NULL, 'z')",
    "SELECT jl.id, jr.id FROM jl RIGHT JOIN jr ON jl.k = jr.k",
    "SELECT jl.id, jr.id FROM jl RIGHT OUTER JOIN jr ON jl.k = jr.k AND jr.w = 'x'",
    "SELECT jl.id, jr.id FROM jl RIGHT JOIN jr ON jl.k = jr.k AND jl.v = 'b'",
    "SELECT jl.id, jr.id FROM jl FULL JOIN jr ON jl.k = jr.k",
    "SELECT jl.id, jr.id FROM jl FULL OUTER JOIN jr ON jl.k = jr.k AND jr.id > 1",
    "SELECT jl.id, jr.id FROM jl FULL JOIN jr ON jl.k < jr.k",
    "SELECT jl.id, jr.id FROM jl FULL JOIN jr ON FALSE",
    "SELECT jl.id, jr.id FROM jl RIGHT JOIN jr ON jl.k = jr.k WHERE jl.id IS NULL",
    "SELECT jl.id, jr.id FROM jl FULL JOIN jr ON jl.k = jr.k WHERE jr.id = 2 OR jl.id = 1",
    "SELECT jl.id, jr.id FROM jl FULL JOIN jr ON jl.k = jr.k WHERE jl.id = 2",
    "SELECT a.id, b.id, jr.id FROM jl AS a JOIN jl AS b ON a.k = b.k AND a.id < b.id RIGHT JOIN jr ON b.k = jr.k",
    "SELECT a.id, jr.id, b.id FROM jl AS a RIGHT JOIN jr ON a.k = jr.k LEFT JOIN jl AS b ON b.id = jr.id",
    "SELECT a.id, jr.id, b.id FROM jl AS a FULL JOIN jr ON a.k = jr.k JOIN jl AS b ON b.id = jr.id",
    "SELECT jr.k, count(jl.id), count(*) FROM jl RIGHT JOIN jr ON jl.k = jr.k GROUP BY jr.k",
    "SELECT jl.id, s.x FROM jl RIGHT JOIN (VALUES (10), (99)) AS s (x) ON jl.k = s.x",
    "SELECT * FROM jl FULL JOIN jr ON jl.id = jr.id",
    "SELECT jl.id, jr.id, x.id FROM jl RIGHT JOIN jr ON jl.k = jr.k, jl AS x WHERE x.id = 1",
    "SELECT jl.id, jr.id FROM jl RIGHT JOIN jr ON jl.k = (SELECT max(k) FROM jr)",
    // to_char of dates and timestamps, PostgreSQL's template patterns.
    "SELECT to_char(TIMESTAMP '2021-03-04 05:06:07.891234', 'YYYY-MM-DD HH24:MI:SS.US'), to_char(TIMESTAMP '2021-03-04 17:06:07', 'HH12:MI AM pm a.m. P.M.')",
    "SELECT to_char(TIMESTAMP '2021-03-04 00:00:00', 'HH HH12 HH24 MS SSSS SSSSS FF1 FF3 FF6')",
    "SELECT to_char(DATE '2021-01-03', 'Day DAY day Dy DY dy D ID DDD IDDD W WW IW Q CC J')",
    "SELECT to_char(DATE '2020-12-31', 'Month MONTH month Mon MON mon MM RM rm FMRM|')",
    "SELECT to_char(DATE '0099-02-03', 'YYYY YYY YY Y Y,YYY IYYY IYY IY I AD BC a.d. b.c.')",
    "SELECT to_char(DATE '2021-09-01', 'FMMonth FMDay FMDD FMMM FMHH24 FMYYYY'), to_char(DATE '2021-09-01', 'DDth DDTH FMDDth MMth')",
    "SELECT to_char(DATE '2021-09-11', 'FMDDth'), to_char(DATE '2021-09-12', 'FMDDth'), to_char(DATE '2021-09-13', 'FMDDth'), to_char(DATE '2021-09-22', 'FMDDth'), to_char(DATE '2021-09-23', 'FMDDth')",
    "SELECT to_char(TIMESTAMP '2021-03-04 05:06:07', '\"Quarter\" Q, \"day\" DD\\Y yyyy-mm-dd hh24:mi:ss')",
    "SELECT to_char(TIMESTAMP '2021-03-04 05:06:07', 'TZ tz OF|')",
    "SELECT to_char(CAST(TIMESTAMP '2021-03-04 05:06:07' AS TIMESTAMPTZ), 'YYYY-MM-DD HH24:MI:SS TZ OF TZH:TZM')",
    "SELECT to_char(d, 'YYYY/MM/DD') FROM dt WHERE id < 3",
    "SELECT to_char(NULL::timestamp, 'YYYY'), to_char(TIMESTAMP '2021-03-04 05:06:07', NULL)",
    "SELECT to_char(TIMESTAMP '2021-03-04 05:06:07', '')",
    "SELECT to_char(DATE '2021-03-04', 'é€ YYYY 日本')",
    "SELECT to_char(DATE '2021-03-04', 'MonthTH DayTH RMth FMMS FMUS')",
    // to_char of numbers and intervals beyond the grids below.
    "SELECT to_char(NULL, '999')",
    "SELECT to_char('12', '999')",
    "SELECT to_char(CAST(NULL AS NUMERIC), '999'), to_char(1, NULL)",
    "SELECT to_char(1, '')",
    "SELECT to_char(12, '9V9999999999')",
    "SELECT to_char(3, '9V999999999')",
    "SELECT to_char(CAST(3 AS BIGINT), '9V999999999999999999')",
    "SELECT to_char(CAST(3 AS BIGINT), '9V9999999999999999999')",
    "SELECT to_char(CAST(10000000000 AS BIGINT), 'RN')",
    "SELECT to_char(10000000000.4, 'RN')",
    "SELECT to_char(3999.5, 'RN'), to_char(0.5, 'FMRN'), to_char(CAST(3.5 AS DOUBLE PRECISION), 'FMRN'), to_char(CAST(2.5 AS REAL), 'FMRN')",
    "SELECT to_char(1.5, '99V9999999999999999999999999999999999999')",
    "SELECT to_char(CAST(1.5 AS DOUBLE PRECISION), '99V999999999999999999999999999999999999999')",
    "SELECT to_char(1, '9PRMI'), to_char(-1, 'FM9PR'), to_char(-1, 'PR9')",
    "SELECT to_char(INTERVAL '-12 hours', 'HH HH12 HH24'), to_char(INTERVAL '-3 days', 'DDth DDTH FMDDth'), to_char(INTERVAL '-1 year', 'YYYYth')",
    "SELECT to_char(INTERVAL '-5 years', 'CC'), to_char(INTERVAL '12345 years', 'CC Y,YYY'), to_char(INTERVAL '-12345 years', 'CC')",
    "SELECT to_char(INTERVAL '1 day', '')",
    "SELECT to_char(INTERVAL '1 day', 'IW IYYY IDDD')",
    // PostgreSQL's int arithmetic wraps (J, DDD) at the extremes.
    "SELECT to_char(INTERVAL '178000000 years 11 mons 2000000000 days 99:59:59.999999', 'J DDD YYYY CC Y,YYY WW W HH24 HH SSSS')",
    "SELECT to_char(INTERVAL '-178000000 years -11 mons -2000000000 days -99:59:59.999999', 'J DDD YYYY CC Y,YYY WW W HH24 HH SSSS RM')",
    // Differences found by random_differential.rs and not fixed (see KNOWN).
    "SELECT 9223372036854775807 = CAST(9223372036854775807 AS DOUBLE PRECISION)",
    "SELECT id FROM dt WHERE s NOT IN (SELECT NULL FROM dt)",
    "SELECT x = TRUE FROM (SELECT NULL) AS s (x)",
    "SELECT (SELECT NULL) UNION SELECT CAST('a' AS VARCHAR(3))",
    "SELECT - NULL",
    "SELECT sum(NULL)",
    "SELECT first_value('a') OVER ()",
    "SELECT DISTINCT 'x' INTERSECT SELECT CAST('a' AS VARCHAR(3))",
    "SELECT 1 IN ((SELECT 1), 2)",
    "SELECT 1 FROM dt AS a, dt AS b JOIN dt AS c ON a.id = c.id",
    "SELECT zz.id FROM dt",
    "SELECT (SELECT max((SELECT y.s FROM dt AS y WHERE y.id = x.id)) FROM dt AS z WHERE z.id = 3) FROM dt AS x",
];

/// `to_char(number, template)`: every number below with every template.
const TO_CHAR_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "7",
    "12",
    "-12",
    "123",
    "-1234",
    "99999",
    "2147483647",
    "CAST(5 AS SMALLINT)",
    "CAST(-42 AS BIGINT)",
    "CAST(125 AS BIGINT)",
    "CAST(123456789012 AS BIGINT)",
    "0.5",
    "-0.5",
    "2.5",
    "0.125",
    "-12.345",
    "9.999",
    "0.001",
    "-0.001",
    "1234.5678",
    "100.00",
    "123456789.987654321",
    "CAST(0.125 AS DOUBLE PRECISION)",
    "CAST(-2.5 AS DOUBLE PRECISION)",
    "CAST(1e20 AS DOUBLE PRECISION)",
    "CAST(1234.5678 AS DOUBLE PRECISION)",
    "CAST(-0.001 AS DOUBLE PRECISION)",
    "CAST(2.5 AS REAL)",
    "CAST(1234.5678 AS REAL)",
    "CAST(-0.1 AS REAL)",
];

const TO_CHAR_NUMBER_TEMPLATES: &[&str] = &[
    "9999",
    "FM9999",
    "0000",
    "FM0000",
    "9,999",
    "9G999",
    "FM9,999,999.999",
    "99.99",
    "FM99.99",
    "999D99",
    "00.00",
    "FM00.00",
    "9.9",
    ".99",
    "0.9",
    "FM9.990",
    "FM0.999",
    "0999.90",
    "9990.99",
    "FM9990.99",
    "99999999999999999999",
    "9999999999999999999999.999999",
    "S9999",
    "9999S",
    "FM9999S",
    "S0999.99",
    "9999.99S",
    "9999MI",
    "MI9999",
    "9999.99MI",
    "FM9999MI",
    "PL9999",
    "FMPL9999",
    "SG9999",
    "9999SG",
    "9999PR",
    "FM9999PR",
    "9999.99PR",
    "L9999",
    "$9,999.99",
    "\"Total: \"9999",
    "\\\"9 9 9\\\"",
    "999 text",
    "B9999 C SP",
    "RN",
    "FMRN",
    "rn",
    "SGRN",
    "MIRNPL",
    "9.99EEEE",
    "9EEEE",
    "0.00000EEEE",
    "9999th",
    "FM999TH",
    "99V99",
    "9V9999",
    "S99V9",
    "9.9.9",
    "S9S",
    "9PR9",
    "9.99EEEES",
];

/// `to_char(interval, template)`: every interval below with every template.
const TO_CHAR_INTERVALS: &[&str] = &[
    "INTERVAL '1 year 2 mons 3 days 04:05:06.789'",
    "INTERVAL '-1 year -2 mons -3 days -04:05:06.789'",
    "INTERVAL '50 hours'",
    "INTERVAL '-50 hours 30 minutes'",
    "INTERVAL '0'",
    "INTERVAL '13 mons 40 days'",
    "INTERVAL '-1234 years -5 mons -17 days -03:04:05.678901'",
    "INTERVAL '12 hours'",
    "INTERVAL '1 day 23:59:59.999999'",
    "INTERVAL '100 years'",
    "INTERVAL '-5 mons'",
    "INTERVAL '21 days 13:00'",
    "INTERVAL '400 days 3 hours'",
    "INTERVAL '-3 years 2 mons 15 days'",
    "INTERVAL '-40 days'",
    "INTERVAL '11 mons 31 days'",
    "INTERVAL '178000000 years 11 mons 2147483647 days'",
    "INTERVAL '-178000000 years -11 mons -2147483647 days'",
];

const TO_CHAR_INTERVAL_TEMPLATES: &[&str] = &[
    "HH24:MI:SS",
    "HH:MI:SS AM",
    "HH12 PM a.m. p.m.",
    "DD HH24",
    "FMDD FMHH24 FMMI FMSS",
    "YYYY-MM-DD",
    "Y,YYY YYY YY Y",
    "FMYYYY FMMM FMYY",
    "DDD WW W Q CC",
    "J",
    "RM rm FMRM|",
    "SSSS SSSSS",
    "MS US FF1 FF2 FF3 FF4 FF5 FF6",
    "DDth HH24TH MIth SSth MMth YYYYth",
    "FMDDth FMHH24th FMMIth",
    "\"days:\" DD, \"time:\" HH24:MI",
    "MonthTH",
    "Mon",
    "Day",
    "Dy",
    "D",
    "ID",
    "TZ",
    "OF",
    "AD",
    "b.c.",
    "IW IYYY IYY IY I IDDD",
    "FMIW FMIYYY FMIDDD IWth",
];

/// Statements where Pistou still differs from PostgreSQL, by reason.
const KNOWN: &[(&str, &[&str])] = &[
    (
        "found by random_differential.rs, not fixed: PostgreSQL compares an integer with a float as two doubles; Pistou compares numbers of different types exactly (a total order for sorting), which differs beyond 2^53",
        &["SELECT 9223372036854775807 = CAST(9223372036854775807 AS DOUBLE PRECISION)"],
    ),
    (
        "found by random_differential.rs, not fixed: PostgreSQL makes a subquery's unknown output column (a quoted literal, NULL) text; Pistou types it by the enclosing context",
        &["SELECT id FROM dt WHERE s NOT IN (SELECT NULL FROM dt)", "SELECT x = TRUE FROM (SELECT NULL) AS s (x)", "SELECT (SELECT NULL) UNION SELECT CAST('a' AS VARCHAR(3))"],
    ),
    (
        "found by random_differential.rs, not fixed: unary minus and sum of an unknown literal are ambiguous in PostgreSQL (42725)",
        &["SELECT - NULL", "SELECT sum(NULL)"],
    ),
    (
        "found by random_differential.rs, not fixed: polymorphic window functions refuse an unknown literal in PostgreSQL (42804); Pistou reads text",
        &["SELECT first_value('a') OVER ()"],
    ),
    (
        "found by random_differential.rs, not fixed: SELECT DISTINCT makes a literal text before the set operation in PostgreSQL",
        &["SELECT DISTINCT 'x' INTERSECT SELECT CAST('a' AS VARCHAR(3))"],
    ),
    (
        "found by random_differential.rs, not fixed: sqlparser 0.63 does not parse a parenthesized subquery followed by more items in an IN list (42601)",
        &["SELECT 1 IN ((SELECT 1), 2)"],
    ),
    (
        "found by random_differential.rs, not fixed: a JOIN binds tighter than a comma, so its ON cannot see the items before the comma (PostgreSQL 42P01); Pistou accepts it (same rows for an inner or left join)",
        &["SELECT 1 FROM dt AS a, dt AS b JOIN dt AS c ON a.id = c.id"],
    ),
    (
        "PostgreSQL runs a FULL JOIN only on merge- or hash-joinable conditions (0A000); Pistou evaluates any condition",
        &["SELECT jl.id, jr.id FROM jl FULL JOIN jr ON jl.k < jr.k"],
    ),
    (
        "PostgreSQL folds constant subexpressions while planning: 1 / 0 fails even where it is never evaluated",
        &["SELECT COALESCE(x, 1 / 0) FROM dt"],
    ),
    (
        "PostgreSQL reads unknown - text as jsonb - text; jsonb is not supported (42883)",
        &[
            "SELECT id, '7' - t FROM dc",
            "SELECT id, '7' - v FROM dc",
            "SELECT id, '7' - c FROM dc",
            "SELECT id, NULL - t FROM dc",
            "SELECT id, NULL - v FROM dc",
            "SELECT id, NULL - c FROM dc",
        ],
    ),
];

fn run_statement(db: &mut Database, client: &mut pg::Client, sql: &str) -> Option<String> {
    let pg_sql = match sql.strip_prefix("CREATE TABLE ") {
        // A temporary table: concurrent runs of the test do not meet.
        Some(rest) => format!("CREATE TEMP TABLE {rest}"),
        None => sql.to_string(),
    };
    let ours = on_pistou(db, sql);
    let theirs = on_postgres(client, &pg_sql);
    (ours != theirs).then(|| format!("{sql}\n    pistou:     {ours:?}\n    postgresql: {theirs:?}"))
}

#[test]
fn results_and_types_match_postgresql() {
    let started = Instant::now();
    let mut client = common::connect("test");
    let mut db = Database::new();
    let mut statements: Vec<String> = STATEMENTS.iter().map(|s| s.to_string()).collect();
    let pairs = |templates: &[&str], operands: &[&str], out: &mut Vec<String>| {
        for template in templates {
            for a in operands {
                for b in operands {
                    out.push(template.replace("{a}", a).replace("{b}", b));
                }
            }
        }
    };
    pairs(TEMPLATES, OPERANDS, &mut statements);
    statements.push(COLUMNS_TABLE.to_string());
    statements.push(COLUMNS_ROWS.to_string());
    pairs(COLUMN_TEMPLATES, COLUMNS, &mut statements);
    for (values, templates) in
        [(TO_CHAR_NUMBERS, TO_CHAR_NUMBER_TEMPLATES), (TO_CHAR_INTERVALS, TO_CHAR_INTERVAL_TEMPLATES)]
    {
        for value in values {
            for template in templates {
                statements.push(format!("SELECT to_char({value}, '{template}')"));
            }
        }
    }
    // A shift past the float range: PostgreSQL prints the infinity's text, or #s.
    for (ty, digits) in [("DOUBLE PRECISION", 400), ("REAL", 50)] {
        for template in
            [format!("9V{}", "9".repeat(digits)), format!("FM{}V{}", "9".repeat(digits + 10), "9".repeat(digits))]
        {
            statements.push(format!("SELECT to_char(CAST(-1.5 AS {ty}), '{template}')"));
        }
    }
    statements.push(
        "SELECT to_char(i2, '999'), to_char(i4, '9999'), to_char(i8, '9999999999'), to_char(n, 'FM99999.999'), \
         to_char(r, '9.99EEEE'), to_char(f, '9.99') FROM dc"
            .to_string(),
    );
    let mut differences = Vec::new();
    let mut fixed = Vec::new();
    for sql in &statements {
        let difference = run_statement(&mut db, &mut client, sql);
        let known = KNOWN.iter().any(|(_, statements)| statements.contains(&sql.as_str()));
        match (known, difference) {
            (false, Some(d)) => differences.push(d),
            (true, None) => fixed.push(sql.clone()),
            _ => {}
        }
    }
    let elapsed = started.elapsed();
    println!("{} statements compared with PostgreSQL in {elapsed:?}", statements.len());
    assert!(
        differences.is_empty(),
        "{} of {} statements differ from PostgreSQL:\n{}",
        differences.len(),
        statements.len(),
        differences.join("\n")
    );
    assert!(fixed.is_empty(), "statements listed in KNOWN now agree with PostgreSQL (remove them): {fixed:?}");
}
