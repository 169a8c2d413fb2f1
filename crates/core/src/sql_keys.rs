//! Where SQL data lives in the key space. Pesto stores rows in the same multi-version key
//! space as Basil's key-value core, so the read, prepare, commit and fallback protocols stay
//! one protocol:
//!
//! - a row of table `t` with encoded primary key `pk` is key `01 len(t) t id pk`, where `id`
//!   (8 bytes, big-endian) is the table's identity, which every CREATE TABLE gets afresh:
//!   a dropped table's rows are never read as rows of a later table of the same name;
//! - the catalog (schema) of shard `s` is key `02 s` (4 bytes, big-endian): every statement
//!   reads it, every DDL transaction writes it on every shard, so MVTSO orders schema
//!   changes against the statements planned with the previous schema;
//! - the counter of sequence `s` with identity `id` is key `03 len(s) s id`: a plain key
//!   (hash-placed, like any key-value key), read and written only by the short
//!   transactions that take blocks of values from it (`pistou_sql::sequence`);
//! - any other key is a plain key-value key.
//!
//! Tables are placed whole on one shard (`ClusterConfig::tables`, or a hash of the name), so a
//! row's shard is its table's shard and a single-table scan reads one shard.

use crate::ids::ShardId;

const ROW_TAG: u8 = 0x01;
const CATALOG_TAG: u8 = 0x02;
const SEQUENCE_TAG: u8 = 0x03;
/// Longest table name, in bytes (the length travels in one byte).
pub const MAX_TABLE_NAME: usize = 255;

/// What a key denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind<'a> {
    Row { table: &'a str, table_id: u64, pk: &'a [u8] },
    Catalog(ShardId),
    Plain,
}

/// The key of a row of table `table` with identity `table_id`; `None` if the table name is
/// empty or too long.
pub fn row_key(table: &str, table_id: u64, pk: &[u8]) -> Option<Vec<u8>> {
    if table.is_empty() || table.len() > MAX_TABLE_NAME {
        return None;
    }
    let mut key = Vec::with_capacity(2 + table.len() + 8 + pk.len());
    key.push(ROW_TAG);
    key.push(table.len() as u8);
    key.extend_from_slice(table.as_bytes());
    key.extend_from_slice(&table_id.to_be_bytes());
    key.extend_from_slice(pk);
    Some(key)
}

/// All row keys of one table (name and identity) start with this prefix.
pub fn table_prefix(table: &str, table_id: u64) -> Option<Vec<u8>> {
    row_key(table, table_id, &[])
}

/// The key holding the counter of sequence `name` with identity `id`; `None` if the name
/// is empty or too long.
pub fn sequence_key(name: &str, id: u64) -> Option<Vec<u8>> {
    if name.is_empty() || name.len() > MAX_TABLE_NAME {
        return None;
    }
    let mut key = Vec::with_capacity(2 + name.len() + 8);
    key.push(SEQUENCE_TAG);
    key.push(name.len() as u8);
    key.extend_from_slice(name.as_bytes());
    key.extend_from_slice(&id.to_be_bytes());
    Some(key)
}

/// The key holding shard `shard`'s catalog.
pub fn catalog_key(shard: ShardId) -> Vec<u8> {
    let mut key = vec![CATALOG_TAG];
    key.extend_from_slice(&shard.0.to_be_bytes());
    key
}

/// The table of a row key (None for other keys).
pub fn row_table(key: &[u8]) -> Option<&str> {
    match key_kind(key) {
        KeyKind::Row { table, .. } => Some(table),
        _ => None,
    }
}

/// Classifies a key. Malformed row or catalog keys are plain keys: they carry no SQL meaning.
pub fn key_kind(key: &[u8]) -> KeyKind<'_> {
    match key {
        [ROW_TAG, len, rest @ ..] if *len > 0 && rest.len() >= *len as usize + 8 => {
            let (name, rest) = rest.split_at(*len as usize);
            let (id, pk) = rest.split_at(8);
            let mut id_bytes = [0u8; 8];
            id_bytes.copy_from_slice(id);
            match std::str::from_utf8(name) {
                Ok(table) => KeyKind::Row { table, table_id: u64::from_be_bytes(id_bytes), pk },
                Err(_) => KeyKind::Plain,
            }
        }
        [CATALOG_TAG, a, b, c, d] => KeyKind::Catalog(ShardId(u32::from_be_bytes([*a, *b, *c, *d]))),
        _ => KeyKind::Plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_keys_round_trip_and_sort_by_table_then_pk() {
        let k = row_key("accounts", 9, &[3, 0, 7]).expect("key");
        assert_eq!(key_kind(&k), KeyKind::Row { table: "accounts", table_id: 9, pk: &[3, 0, 7] });
        let a = row_key("t", 1, &[1]).expect("key");
        let b = row_key("t", 1, &[2]).expect("key");
        assert!(a < b);
        assert!(a.starts_with(&table_prefix("t", 1).expect("prefix")));
        assert_eq!(row_key("", 1, &[1]), None);
        assert_eq!(row_key(&"x".repeat(256), 1, &[1]), None);
    }

    #[test]
    fn a_recreated_table_shares_no_key_with_the_dropped_one() {
        let old = row_key("r", 3, &[1]).expect("key");
        let new = row_key("r", 5, &[1]).expect("key");
        assert_ne!(old, new);
        assert!(!new.starts_with(&table_prefix("r", 3).expect("prefix")));
        assert!(matches!(key_kind(&new), KeyKind::Row { table: "r", table_id: 5, .. }));
    }

    #[test]
    fn catalog_keys_and_garbage() {
        assert_eq!(key_kind(&catalog_key(ShardId(7))), KeyKind::Catalog(ShardId(7)));
        assert_eq!(key_kind(b"hello"), KeyKind::Plain);
        assert_eq!(key_kind(&[ROW_TAG, 5, b'a']), KeyKind::Plain, "truncated table name");
        assert_eq!(key_kind(&[ROW_TAG, 1, b'a', 0, 0, 0]), KeyKind::Plain, "truncated table id");
        assert_eq!(key_kind(&[ROW_TAG, 1, 0xff]), KeyKind::Plain, "not UTF-8");
        assert_eq!(key_kind(&[ROW_TAG, 0]), KeyKind::Plain, "empty table name");
        assert_eq!(key_kind(&[CATALOG_TAG, 0, 0]), KeyKind::Plain);
    }
}
