// A node-postgres program as a user first writes one: a schema, parameterized statements,
// a transaction with a savepoint, an error, and the metadata queries tools run
// (information_schema, pg_catalog). Prints what it sees; the test compares the output with
// the same program's on PostgreSQL. Usage: node node_program.js <connection string>
const { Client } = require('pg');

// Result columns with their type OIDs; catalog queries without (PostgreSQL's catalog columns
// of type name are text here).
function show(label, result, typed = true) {
  const fields = result.fields.map((f) => (typed ? `${f.name}:${f.dataTypeID}` : f.name)).join(',');
  console.log(`${label} [${fields}] ${JSON.stringify(result.rows)}`);
}

async function main() {
  const client = new Client({ connectionString: process.argv[2] });
  await client.connect();
  await client.query('DROP TABLE IF EXISTS node_items');
  await client.query('DROP TABLE IF EXISTS node_owners');
  await client.query(`CREATE TABLE node_owners (
      id SERIAL PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE, joined DATE DEFAULT '2024-01-01')`);
  await client.query(`CREATE TABLE node_items (
      id BIGINT PRIMARY KEY, owner_id INT NOT NULL REFERENCES node_owners (id),
      label TEXT, price NUMERIC(10, 2) CHECK (price >= 0), tag UUID, seen TIMESTAMPTZ)`);
  await client.query('CREATE INDEX node_items_label ON node_items (label)');

  for (const name of ['ann', 'bob']) {
    show('insert owner', await client.query('INSERT INTO node_owners (name) VALUES ($1) RETURNING id, name, joined', [name]));
  }
  const items = [
    [1, 1, 'lamp', '12.50', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-05-01T10:00:00Z'],
    [2, 1, 'desk', '99.00', null, null],
    [3, 2, null, '0.10', 'B0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12', '2024-05-02 08:30:00+00'],
  ];
  for (const row of items) {
    await client.query('INSERT INTO node_items VALUES ($1, $2, $3, $4, $5, $6)', row);
  }
  show('join', await client.query(
    `SELECT o.name, i.label, i.price, i.tag, i.seen FROM node_items i JOIN node_owners o ON o.id = i.owner_id
     ORDER BY i.id`));
  show('aggregate', await client.query(
    'SELECT owner_id, count(*)::int AS n, sum(price) AS total FROM node_items GROUP BY owner_id ORDER BY owner_id'));
  show('named prepared', await client.query({ name: 'by_owner', text: 'SELECT id FROM node_items WHERE owner_id = $1 ORDER BY id', values: [1] }));
  show('named prepared again', await client.query({ name: 'by_owner', text: 'SELECT id FROM node_items WHERE owner_id = $1 ORDER BY id', values: [2] }));

  await client.query('BEGIN');
  await client.query('UPDATE node_items SET price = price * 2 WHERE owner_id = $1', [1]);
  await client.query('SAVEPOINT before_delete');
  await client.query('DELETE FROM node_items WHERE id = 2');
  await client.query('ROLLBACK TO SAVEPOINT before_delete');
  show('in transaction', await client.query('SELECT id, price FROM node_items ORDER BY id'));
  await client.query('COMMIT');
  show('update from', await client.query(
    `UPDATE node_items i SET label = o.name || ':' || coalesce(i.label, '?') FROM node_owners o
     WHERE o.id = i.owner_id RETURNING i.id, i.label`).then((r) => { r.rows.sort((a, b) => Number(a.id) - Number(b.id)); return r; }));

  for (const bad of ['INSERT INTO node_items VALUES (1, 1, NULL, NULL, NULL, NULL)',
                     'INSERT INTO node_items VALUES (9, 7, NULL, NULL, NULL, NULL)',
                     'INSERT INTO node_items VALUES (9, 1, NULL, -1, NULL, NULL)',
                     "SELECT 'not-a-uuid'::uuid",
                     'SELECT nope FROM node_items']) {
    try {
      await client.query(bad);
      console.log(`no error: ${bad}`);
    } catch (e) {
      console.log(`error ${e.code} ${e.constraint || ''}: ${bad}`);
    }
  }

  // Metadata, as migration tools and admin UIs ask for it.
  show('tables', await client.query(
    `SELECT table_name, table_type FROM information_schema.tables
     WHERE table_schema = 'public' AND table_name LIKE 'node_%' ORDER BY table_name`), false);
  for (const table of ['node_owners', 'node_items']) {
    show(`columns ${table}`, await client.query(
      `SELECT column_name, data_type, is_nullable, column_default, character_maximum_length,
              numeric_precision, numeric_scale, ordinal_position
       FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1
       ORDER BY ordinal_position`, [table]), false);
    show(`constraints ${table}`, await client.query(
      `SELECT tc.constraint_name, tc.constraint_type, kcu.column_name
       FROM information_schema.table_constraints tc
       LEFT JOIN information_schema.key_column_usage kcu
         ON kcu.constraint_name = tc.constraint_name AND kcu.table_name = tc.table_name
       WHERE tc.table_name = $1 AND tc.constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')
       ORDER BY tc.constraint_name, kcu.ordinal_position`, [table]), false);
    show(`pg_attribute ${table}`, await client.query(
      `SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
       WHERE c.relname = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, [table]), false);
    show(`indexes ${table}`, await client.query(
      `SELECT i.relname AS index, ix.indisunique, ix.indisprimary
       FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
       WHERE t.relname = $1 ORDER BY i.relname`, [table]), false);
  }
  show('foreign keys', await client.query(
    `SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
     WHERE conrelid = 'node_items'::regclass AND contype = 'f' ORDER BY conname`), false);
  show('sequences', await client.query(
    `SELECT sequence_name, data_type FROM information_schema.sequences
     WHERE sequence_name LIKE 'node_%' ORDER BY 1`), false);
  await client.query('DROP TABLE node_items');
  await client.query('DROP TABLE node_owners');
  await client.end();
  console.log('NODE DONE');
}

main().catch((e) => {
  console.log(`FAILED ${e.code || ''} ${e.message}`);
  process.exit(1);
});
