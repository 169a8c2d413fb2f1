//! `pistou byzantine-client`: a deliberately Byzantine client for tests and demonstrations of
//! the recovery protocol (stall, equivocate, ...). It signs with its own client key and can
//! do nothing a client could not; see `pistou_adversary::ClientFault`.

use crate::files::{client_key_path, config_dir, load_config, read_key};
use crate::usage::Usage;
use anyhow::Result;
use pistou_adversary::{ByzClient, ClientFault, KeyPicker};
use pistou_core::ClientId;
use rand::Rng;
use std::time::{Duration, Instant};

pub struct ByzantineSpec {
    pub identity: crate::files::ClientIdentity,
    pub fault: String,
    pub keys: Vec<String>,
    pub txns: usize,
    pub gap_ms: u64,
}

pub async fn run(spec: ByzantineSpec) -> Result<usize> {
    let fault: ClientFault = spec.fault.parse().map_err(Usage)?;
    if spec.keys.is_empty() || spec.keys.iter().any(|k| k.is_empty() || k.len() > pistou_wire::MAX_KEY_BYTES) {
        return Err(Usage("--keys needs one or more non-empty keys".into()).into());
    }
    if spec.txns == 0 || spec.txns > 100_000 || spec.gap_ms > 3_600_000 {
        return Err(Usage("--txns must be in 1..=100000 and --gap-ms at most one hour".into()).into());
    }
    let id = &spec.identity;
    let config = load_config(&id.config)?;
    let key_path = id.key.clone().unwrap_or_else(|| client_key_path(&config_dir(&id.config), id.client));
    let key = read_key(&key_path)?;
    let keys: Vec<Vec<u8>> = spec.keys.iter().map(|k| k.as_bytes().to_vec()).collect();
    let pick: KeyPicker = Box::new(move |rng| keys[rng.gen_range(0..keys.len())].clone());
    let gap_us = spec.gap_ms * 1_000;
    let actor = ByzClient::new(0, ClientId(id.client), key, fault, config.clone(), pick, spec.txns, gap_us);
    // Long enough to start every transaction and let the last one reach its votes.
    let until = Instant::now() + Duration::from_millis(spec.gap_ms * spec.txns as u64) + Duration::from_secs(2);
    pistou_adversary::net::drive(config, ClientId(id.client), actor, until, id.client).await
}
