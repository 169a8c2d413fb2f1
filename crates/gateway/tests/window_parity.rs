//! Window functions (and the other query forms of issue 26) through the gateway and on the
//! machine's PostgreSQL (127.0.0.1:5432, database `test`, user `postgres`, trust auth): the
//! same statements, compared row by row as text, errors by SQLSTATE. Tables are named
//! `win_*` and dropped first. An unreachable PostgreSQL fails the test.

mod support;

use pistou_gateway::GatewayConfig;
use support::{bounded, connect, postgres, start};
use tokio_postgres::{Client, SimpleQueryMessage};

#[derive(Debug, PartialEq)]
enum Outcome {
    Rows(Vec<Vec<Option<String>>>),
    Done,
    Error(String),
}

async fn run(client: &Client, sql: &str) -> Outcome {
    match client.simple_query(sql).await {
        Ok(messages) => {
            let rows: Vec<Vec<Option<String>>> = messages
                .iter()
                .filter_map(|m| match m {
                    SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
                    _ => None,
                })
                .collect();
            let described = messages.iter().any(|m| matches!(m, SimpleQueryMessage::RowDescription(_)));
            if rows.is_empty() && !described {
                Outcome::Done
            } else {
                Outcome::Rows(rows)
            }
        }
        Err(e) => {
            Outcome::Error(e.as_db_error().map_or_else(|| format!("no SQLSTATE: {e}"), |d| d.code().code().into()))
        }
    }
}

/// Runs each statement on both servers and compares; returns the outcomes.
async fn compare(script: &[&str]) -> Vec<Outcome> {
    let pg = postgres().await;
    let h = start(GatewayConfig::default()).await;
    let gw = connect(h.addr).await;
    let mut outcomes = Vec::new();
    for sql in script {
        let (expected, got) = (run(&pg, sql).await, run(&gw, sql).await);
        assert_eq!(got, expected, "{sql}\nPistou (left) differs from PostgreSQL (right)");
        outcomes.push(got);
    }
    h.stop().await;
    outcomes
}

const SETUP: &[&str] = &[
    "DROP TABLE IF EXISTS win_emp",
    "CREATE TABLE win_emp (id INT PRIMARY KEY, dept TEXT, salary INT, bonus NUMERIC(6,2), w DOUBLE PRECISION)",
    "INSERT INTO win_emp VALUES (1, 'a', 100, 1.5, 0.5), (2, 'a', 200, NULL, 1), (3, 'a', 200, 2.5, NULL), \
     (4, 'b', 50, 0, 2.25), (5, 'b', NULL, 1, 3), (6, 'c', 300, 3, -1), (7, 'a', 150, NULL, 0.1), (8, 'b', 50, 4, 8)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_functions_match_postgres() {
    bounded(120, async {
        let queries = [
            "SELECT id, row_number() OVER (PARTITION BY dept ORDER BY salary, id), rank() OVER (PARTITION BY dept ORDER BY salary), \
             dense_rank() OVER (PARTITION BY dept ORDER BY salary), percent_rank() OVER (PARTITION BY dept ORDER BY salary), \
             cume_dist() OVER (PARTITION BY dept ORDER BY salary) FROM win_emp ORDER BY id",
            "SELECT id, rank() OVER (ORDER BY salary DESC), rank() OVER (ORDER BY salary NULLS FIRST), ntile(3) OVER (ORDER BY id) FROM win_emp ORDER BY id",
            "SELECT id, lag(salary) OVER (ORDER BY id), lead(salary, 2, 0) OVER (ORDER BY id), lag(w, 1, 9.5) OVER (ORDER BY id), \
             lead(dept) OVER (PARTITION BY dept ORDER BY id) FROM win_emp ORDER BY id",
            "SELECT id, first_value(salary) OVER w, last_value(salary) OVER w, nth_value(salary, 2) OVER w, max(id) OVER w, \
             count(*) OVER w FROM win_emp WINDOW w AS (PARTITION BY dept ORDER BY salary) ORDER BY id",
            "SELECT id, sum(salary) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             avg(w) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), sum(bonus) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING), \
             min(salary) OVER (PARTITION BY dept), count(salary) OVER () FROM win_emp ORDER BY id",
            "SELECT id, sum(id) OVER (ORDER BY salary GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING), \
             sum(w) OVER (ORDER BY salary RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM win_emp ORDER BY id",
            "SELECT dept, sum(salary), rank() OVER (ORDER BY sum(salary) DESC), sum(count(*)) OVER (), \
             lag(dept) OVER (ORDER BY dept) FROM win_emp GROUP BY dept ORDER BY dept",
            "SELECT id, dept FROM (SELECT id, dept, row_number() OVER (PARTITION BY dept ORDER BY salary DESC NULLS LAST, id) AS rn \
             FROM win_emp) s WHERE rn = 1 ORDER BY id",
            "SELECT DISTINCT dept, count(*) OVER (PARTITION BY dept) FROM win_emp ORDER BY 1",
            "SELECT id, row_number() OVER (ORDER BY id) * 10 FROM win_emp ORDER BY rank() OVER (ORDER BY w DESC NULLS LAST), id LIMIT 3",
            "SELECT sum(1) OVER (), row_number() OVER ()",
            // Errors, by SQLSTATE.
            "SELECT id FROM win_emp WHERE row_number() OVER () > 1",
            "SELECT dept FROM win_emp GROUP BY dept HAVING rank() OVER () > 0",
            "SELECT sum(row_number() OVER ()) FROM win_emp",
            "SELECT row_number() OVER (ORDER BY rank() OVER ()) FROM win_emp",
            "SELECT ntile(0) OVER () FROM win_emp",
            "SELECT nth_value(id, -1) OVER () FROM win_emp",
            "SELECT sum(id) OVER (ORDER BY id ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM win_emp",
            "SELECT sum(id) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM win_emp",
            "SELECT rank() OVER nope FROM win_emp",
            "SELECT lower(dept) OVER () FROM win_emp",
            "SELECT count(DISTINCT dept) OVER () FROM win_emp",
        ];
        let script: Vec<&str> = SETUP.iter().copied().chain(queries).collect();
        let outcomes = compare(&script).await;
        // The comparison means something: rows came back, and errors too.
        assert!(outcomes.iter().filter(|o| matches!(o, Outcome::Rows(r) if !r.is_empty())).count() >= 11);
        assert!(outcomes.iter().filter(|o| matches!(o, Outcome::Error(_))).count() >= 11);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recursive_queries_and_query_forms_match_postgres() {
    bounded(120, async {
        let script = [
            "DROP TABLE IF EXISTS win_tree",
            "CREATE TABLE win_tree (id INT PRIMARY KEY, parent INT, name TEXT)",
            "INSERT INTO win_tree VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'a1'), (5, 4, 'a11'), (6, 3, 'b1')",
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT n, sum(n) OVER (ORDER BY n) FROM t ORDER BY n",
            "WITH RECURSIVE sub AS (SELECT id, 0 AS depth, name AS path FROM win_tree WHERE id = 1 UNION ALL \
             SELECT c.id, s.depth + 1, s.path || '/' || c.name FROM win_tree c JOIN sub s ON c.parent = s.id) \
             SELECT id, depth, path FROM sub ORDER BY id",
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT (n % 4) + 1 FROM t) SELECT n FROM t ORDER BY n",
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT t.n + 1 FROM t, t AS u WHERE t.n < 3) SELECT * FROM t",
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1::bigint FROM t WHERE n < 3) SELECT * FROM t",
            "TABLE win_tree",
            "SELECT id FROM win_tree WHERE (id, parent) IN ((2, 1), (4, 2), (6, 1)) ORDER BY id",
            "SELECT k, p FROM win_tree AS w (k, p) WHERE p = 1 ORDER BY k",
            "SELECT a.id, b.id FROM (win_tree a JOIN win_tree b ON b.parent = a.id) ORDER BY 1, 2",
            "SELECT * FROM win_tree AS w (a, b, c, d)",
        ];
        let outcomes = compare(&script).await;
        assert!(outcomes.iter().filter(|o| matches!(o, Outcome::Rows(r) if !r.is_empty())).count() >= 7);
        assert!(outcomes.iter().filter(|o| matches!(o, Outcome::Error(_))).count() >= 3);
    })
    .await;
}
