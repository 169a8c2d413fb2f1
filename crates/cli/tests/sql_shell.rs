//! `pistou sql` as a user runs it, against the machine's PostgreSQL (127.0.0.1:5432, trust
//! auth, database `test`): the shell is a plain PostgreSQL-protocol client, so the same
//! shell the demo opens on a Pistou gateway must behave on PostgreSQL itself.

mod common;

use common::*;
use std::time::Duration;

const POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

#[test]
fn sql_shell_runs_a_multi_line_script_and_reports_sqlstates() {
    // A temporary table lives in this session only: parallel runs cannot collide.
    let script = "\
CREATE TEMP TABLE shell_accounts (id int PRIMARY KEY, owner text);
INSERT INTO shell_accounts VALUES (1, 'ann'),
  (22, NULL);   -- a statement over two lines
SELECT id, owner FROM shell_accounts
  ORDER BY id;
SELECT 'semi;colon' AS s;
INSERT INTO shell_accounts VALUES (1, 'dup');
\\bogus
SELECT 1/0;
\\q
SELECT 'after quit';
";
    let r = pistou_with_input(&["sql", "--url", POSTGRES], script, Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    let expected = "\
CREATE TABLE
INSERT 0 2
 id | owner
----+-------
 1  | ann
 22 |
(2 rows)
 s
------------
 semi;colon
(1 row)
ERROR:  duplicate key value violates unique constraint \"shell_accounts_pkey\" (SQLSTATE 23505)
unknown command \\bogus; \\? lists the commands
ERROR:  division by zero (SQLSTATE 22012)
";
    assert_eq!(r.stdout, expected, "stderr: {}", r.stderr);
}

#[test]
fn sql_shell_reports_an_unreachable_server() {
    let port = free_base_port(1);
    let url = format!("postgres://pistou@127.0.0.1:{port}/pistou");
    let r = pistou_with_input(&["sql", "--url", &url], "", Duration::from_secs(30));
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains(&format!("cannot connect to {url}")), "{}", r.stderr);
}
