//! Basil §4.4 reply batching: one signature per Merkle root, and a cache of verified
//! `(signer, root, signature)` triples. See the crate docs for the safety argument.

use std::collections::{HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::merkle::{merkle_root_and_proofs, merkle_root_from_proof, MerkleProof};
use crate::sig::{verify, verify_batch, PublicKey, SecretKey, Signature};
use crate::{CryptoError, Hash};

/// Domain separator for batch roots, so a batch signature can never be confused with a
/// signature over some other protocol message that happens to be 32 bytes.
pub const BATCH_DOMAIN: &[u8; 15] = b"pistou-batch-v1";

/// The exact bytes signed for a batch root: `BATCH_DOMAIN || root` (fixed length).
pub fn batch_message(root: &Hash) -> [u8; 47] {
    let mut m = [0u8; 47];
    m[..15].copy_from_slice(BATCH_DOMAIN);
    m[15..].copy_from_slice(root);
    m
}

/// A payload's share of a batch signature: the signed root, the signature, and the
/// Merkle path from the payload hash to the root.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct BatchSignature {
    pub root: Hash,
    pub signature: Signature,
    pub proof: MerkleProof,
}

/// Signs sets of payload hashes with one signature per (at most `max_batch`) payloads.
pub struct BatchSigner {
    key: SecretKey,
    public: PublicKey,
    max_batch: usize,
}

impl BatchSigner {
    /// `max_batch` is clamped to at least 1.
    pub fn new(key: SecretKey, max_batch: usize) -> Self {
        let public = key.public();
        BatchSigner { key, public, max_batch: max_batch.max(1) }
    }

    pub fn public(&self) -> PublicKey {
        self.public
    }

    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// Sign a set of payload hashes at once: returns one `BatchSignature` per input, in
    /// order. Inputs are cut into consecutive chunks of at most `max_batch`, each with its
    /// own tree and signature. Empty input gives an empty vector (nothing is signed).
    pub fn sign_batch(&self, payload_hashes: &[Hash]) -> Vec<BatchSignature> {
        let mut out = Vec::with_capacity(payload_hashes.len());
        for chunk in payload_hashes.chunks(self.max_batch) {
            let (root, proofs) = merkle_root_and_proofs(chunk);
            let signature = self.key.sign(&batch_message(&root));
            out.extend(proofs.into_iter().map(|proof| BatchSignature { root, signature, proof }));
        }
        out
    }

    /// A batch of one: proof with no siblings.
    pub fn sign_one(&self, payload_hash: &Hash) -> BatchSignature {
        let (root, _) = merkle_root_and_proofs(std::slice::from_ref(payload_hash));
        BatchSignature {
            root,
            signature: self.key.sign(&batch_message(&root)),
            proof: MerkleProof { index: 0, siblings: Vec::new() },
        }
    }
}

type CacheKey = (PublicKey, Hash, Signature);

/// Bounded set of `(signer, root, signature)` triples whose signature verified.
/// FIFO eviction (a hit does not refresh an entry): simple, and batches are short-lived.
/// Capacity 0 disables caching.
pub struct VerifyCache {
    capacity: usize,
    set: HashSet<CacheKey>,
    order: VecDeque<CacheKey>,
    hits: u64,
    misses: u64,
}

impl VerifyCache {
    pub fn new(capacity: usize) -> Self {
        // Do not pre-allocate `capacity`: it may be large and mostly unused.
        VerifyCache { capacity, set: HashSet::new(), order: VecDeque::new(), hits: 0, misses: 0 }
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Lookups answered from the cache (no ed25519 verification).
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Lookups that needed an ed25519 verification (whatever its outcome).
    pub fn misses(&self) -> u64 {
        self.misses
    }

    pub fn clear(&mut self) {
        self.set.clear();
        self.order.clear();
    }

    /// Remembers a batch signature this process produced itself with `signer`'s key (valid
    /// by construction), so that its own signatures inside certificates cost no verification.
    pub fn remember_own(&mut self, signer: PublicKey, bs: &BatchSignature) {
        self.insert((signer, bs.root, bs.signature));
    }

    fn contains(&self, k: &CacheKey) -> bool {
        self.set.contains(k)
    }

    /// Only call with triples whose signature verified.
    fn insert(&mut self, k: CacheKey) {
        if self.capacity == 0 || self.set.contains(&k) {
            return;
        }
        while self.set.len() >= self.capacity {
            match self.order.pop_front() {
                Some(old) => {
                    self.set.remove(&old);
                }
                None => break,
            }
        }
        self.set.insert(k);
        self.order.push_back(k);
    }
}

/// The proof half of the check, never skipped: the payload must lead to `bs.root`.
fn check_proof(payload_hash: &Hash, bs: &BatchSignature) -> Result<(), CryptoError> {
    if merkle_root_from_proof(payload_hash, &bs.proof)? == bs.root {
        Ok(())
    } else {
        Err(CryptoError::BadProof)
    }
}

/// Check that `payload_hash` is covered by `bs` and that `bs.signature` is `signer`'s
/// signature of `bs.root`. A cached `(signer, root, signature)` skips the ed25519 verify
/// but the root is always recomputed from the proof.
pub fn verify_batched(
    signer: &PublicKey,
    payload_hash: &Hash,
    bs: &BatchSignature,
    cache: &mut VerifyCache,
) -> Result<(), CryptoError> {
    check_proof(payload_hash, bs)?;
    let key = (*signer, bs.root, bs.signature);
    if cache.contains(&key) {
        cache.hits += 1;
        return Ok(());
    }
    cache.misses += 1;
    verify(signer, &batch_message(&bs.root), &bs.signature)?;
    cache.insert(key);
    Ok(())
}

/// [`verify_batched`] for many items: proofs are checked per item, cache misses are
/// deduplicated and checked with one ed25519 batch verification; if that fails, each
/// distinct triple is verified alone to attribute the failure. Results are per item, in
/// order. Items repeating a triple already verified earlier in the same call count as
/// hits.
pub fn verify_batched_many(
    items: &[(&PublicKey, &Hash, &BatchSignature)],
    cache: &mut VerifyCache,
) -> Vec<Result<(), CryptoError>> {
    let mut results: Vec<Result<(), CryptoError>> = Vec::with_capacity(items.len());
    // Distinct triples to verify, and for each item the slot of its triple.
    let mut pending: Vec<CacheKey> = Vec::new();
    let mut slot_of: HashMap<CacheKey, usize> = HashMap::new();
    let mut item_slot: Vec<Option<usize>> = Vec::with_capacity(items.len());

    for (signer, payload_hash, bs) in items {
        if let Err(e) = check_proof(payload_hash, bs) {
            results.push(Err(e));
            item_slot.push(None);
            continue;
        }
        let key = (**signer, bs.root, bs.signature);
        if cache.contains(&key) {
            cache.hits += 1;
            results.push(Ok(()));
            item_slot.push(None);
            continue;
        }
        let slot = match slot_of.get(&key) {
            Some(&s) => {
                cache.hits += 1;
                s
            }
            None => {
                cache.misses += 1;
                pending.push(key);
                slot_of.insert(key, pending.len() - 1);
                pending.len() - 1
            }
        };
        results.push(Ok(())); // provisional; overwritten below if the triple fails
        item_slot.push(Some(slot));
    }

    if pending.is_empty() {
        return results;
    }
    let msgs: Vec<[u8; 47]> = pending.iter().map(|(_, root, _)| batch_message(root)).collect();
    let batch: Vec<(&PublicKey, &[u8], &Signature)> =
        pending.iter().zip(&msgs).map(|((pk, _, sig), m)| (pk, m.as_slice(), sig)).collect();
    let verdicts: Vec<Result<(), CryptoError>> = match verify_batch(&batch) {
        Ok(()) => vec![Ok(()); pending.len()],
        // Someone in the batch is bad: find out who, one by one.
        Err(_) => batch.iter().map(|(pk, m, sig)| verify(pk, m, sig)).collect(),
    };
    for (key, v) in pending.iter().zip(&verdicts) {
        if v.is_ok() {
            cache.insert(*key);
        }
    }
    for (r, slot) in results.iter_mut().zip(&item_slot) {
        if let Some(s) = slot {
            if let Some(v) = verdicts.get(*s) {
                *r = v.clone();
            }
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash;
    use std::time::Instant;

    fn payloads(n: usize, salt: u8) -> Vec<Hash> {
        (0..n).map(|i| hash(&[salt, i as u8, (i >> 8) as u8])).collect()
    }

    fn signer(i: u8, max: usize) -> BatchSigner {
        BatchSigner::new(SecretKey::from_seed([i; 32]), max)
    }

    #[test]
    fn sign_batch_and_verify_every_item() {
        let s = signer(1, 8);
        let ps = payloads(21, 0);
        let bss = s.sign_batch(&ps);
        assert_eq!(bss.len(), 21);
        // 21 payloads with max 8 => 3 distinct roots (8, 8, 5).
        let roots: HashSet<Hash> = bss.iter().map(|b| b.root).collect();
        assert_eq!(roots.len(), 3);
        let mut cache = VerifyCache::new(100);
        for (p, bs) in ps.iter().zip(&bss) {
            assert_eq!(verify_batched(&s.public(), p, bs, &mut cache), Ok(()));
        }
        assert_eq!(cache.misses(), 3);
        assert_eq!(cache.hits(), 18);
        assert_eq!(cache.len(), 3);
        // Payload swapped between items of the same batch: proof fails.
        assert_eq!(verify_batched(&s.public(), &ps[1], &bss[0], &mut cache), Err(CryptoError::BadProof));
        // Wrong signer.
        let other = signer(2, 8);
        assert!(verify_batched(&other.public(), &ps[0], &bss[0], &mut cache).is_err());
        assert!(s.sign_batch(&[]).is_empty());
        assert_eq!(BatchSigner::new(SecretKey::from_seed([3; 32]), 0).max_batch(), 1);
    }

    #[test]
    fn sign_one() {
        let s = signer(1, 8);
        let p = hash(b"p");
        let bs = s.sign_one(&p);
        assert!(bs.proof.siblings.is_empty());
        let mut cache = VerifyCache::new(4);
        assert_eq!(verify_batched(&s.public(), &p, &bs, &mut cache), Ok(()));
        assert_eq!(bs, s.sign_batch(&[p])[0]);
    }

    #[test]
    fn cached_signature_with_wrong_proof_is_rejected() {
        let s = signer(1, 16);
        let ps = payloads(16, 1);
        let bss = s.sign_batch(&ps);
        let mut cache = VerifyCache::new(10);
        assert_eq!(verify_batched(&s.public(), &ps[3], &bss[3], &mut cache), Ok(()));
        assert_eq!((cache.hits(), cache.misses()), (0, 1));
        // Now cached. A forged payload with a valid-looking batch signature must fail.
        let forged = hash(b"forged");
        assert_eq!(verify_batched(&s.public(), &forged, &bss[3], &mut cache), Err(CryptoError::BadProof));
        let mut bad = bss[3].clone();
        bad.proof.siblings[2][0] ^= 1;
        assert_eq!(verify_batched(&s.public(), &ps[3], &bad, &mut cache), Err(CryptoError::BadProof));
        let mut bad = bss[3].clone();
        bad.proof.index ^= 1;
        assert_eq!(verify_batched(&s.public(), &ps[3], &bad, &mut cache), Err(CryptoError::BadProof));
        // Proof rebuilt for a different root but the cached signature attached.
        let (other_root, other_proofs) = merkle_root_and_proofs(&[forged, ps[0]]);
        let bad = BatchSignature { root: other_root, signature: bss[3].signature, proof: other_proofs[0].clone() };
        assert_eq!(verify_batched(&s.public(), &forged, &bad, &mut cache), Err(CryptoError::BadSignature));
        // Same root, tampered signature: not a cache hit, fails verification.
        let mut bad = bss[3].clone();
        bad.signature.0[40] ^= 1;
        assert!(verify_batched(&s.public(), &ps[3], &bad, &mut cache).is_err());
        assert_eq!(cache.len(), 1, "failed verifications are never cached");
        // The good one still hits.
        assert_eq!(verify_batched(&s.public(), &ps[4], &bss[4], &mut cache), Ok(()));
        assert_eq!(cache.hits(), 1);
        // Hostile proof depth rejected even with a cached triple.
        let mut deep = bss[4].clone();
        deep.proof.siblings = vec![[0u8; 32]; 100];
        assert_eq!(verify_batched(&s.public(), &ps[4], &deep, &mut cache), Err(CryptoError::ProofTooDeep));
    }

    #[test]
    fn cache_capacity_bound_fifo() {
        let s = signer(1, 1);
        let ps = payloads(10, 2);
        let bss = s.sign_batch(&ps); // 10 batches of 1 => 10 roots
        let mut cache = VerifyCache::new(3);
        for (p, bs) in ps.iter().zip(&bss) {
            verify_batched(&s.public(), p, bs, &mut cache).unwrap();
            assert!(cache.len() <= 3);
        }
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.misses(), 10);
        // Oldest evicted, newest retained.
        verify_batched(&s.public(), &ps[9], &bss[9], &mut cache).unwrap();
        assert_eq!(cache.hits(), 1);
        verify_batched(&s.public(), &ps[0], &bss[0], &mut cache).unwrap();
        assert_eq!(cache.misses(), 11);
        assert_eq!(cache.len(), 3);

        let mut off = VerifyCache::new(0);
        verify_batched(&s.public(), &ps[0], &bss[0], &mut off).unwrap();
        verify_batched(&s.public(), &ps[0], &bss[0], &mut off).unwrap();
        assert_eq!((off.len(), off.hits(), off.misses()), (0, 0, 2));
    }

    #[test]
    fn many_with_mixed_failures() {
        let a = signer(1, 4);
        let b = signer(2, 4);
        let pa = payloads(10, 3);
        let pb = payloads(6, 4);
        let ba = a.sign_batch(&pa);
        let bb = b.sign_batch(&pb);
        let (apk, bpk) = (a.public(), b.public());
        let forged = hash(b"nope");
        let mut bad_sig = bb[5].clone();
        bad_sig.signature.0[1] ^= 4;

        let mut items: Vec<(&PublicKey, &Hash, &BatchSignature)> = Vec::new();
        for (p, bs) in pa.iter().zip(&ba) {
            items.push((&apk, p, bs));
        }
        for (p, bs) in pb.iter().zip(&bb).take(4) {
            items.push((&bpk, p, bs));
        }
        items.push((&apk, &forged, &ba[0])); // bad proof
        items.push((&bpk, &pb[5], &bad_sig)); // bad signature (its own triple)
        items.push((&apk, &pb[0], &bb[0])); // wrong signer
        let mut cache = VerifyCache::new(100);
        let res = verify_batched_many(&items, &mut cache);
        assert_eq!(res.len(), items.len());
        for r in &res[..14] {
            assert_eq!(r, &Ok(()));
        }
        assert_eq!(res[14], Err(CryptoError::BadProof));
        assert_eq!(res[15], Err(CryptoError::BadSignature));
        assert_eq!(res[16], Err(CryptoError::BadSignature));
        // Distinct triples: a has 3 roots, b has 1 root in the first 4 items, + bad sig,
        // + (a, b's root) => 6 misses; good ones cached (4).
        assert_eq!(cache.misses(), 6);
        assert_eq!(cache.len(), 4);
        // Agrees with the one-by-one API.
        let mut c2 = VerifyCache::new(100);
        for (it, r) in items.iter().zip(&res) {
            assert_eq!(&verify_batched(it.0, it.1, it.2, &mut c2), r);
        }
        // Second pass: all good items hit.
        let before = cache.hits();
        let res2 = verify_batched_many(&items, &mut cache);
        assert_eq!(res2, res);
        assert_eq!(cache.hits() - before, 14);
        assert!(verify_batched_many(&[], &mut cache).is_empty());
    }

    #[test]
    fn batch_signature_postcard_round_trip() {
        let s = signer(1, 8);
        let bss = s.sign_batch(&payloads(5, 5));
        for bs in &bss {
            let bytes = postcard::to_allocvec(bs).unwrap();
            let back: BatchSignature = postcard::from_bytes(&bytes).unwrap();
            assert_eq!(&back, bs);
        }
        // Truncated input is an error, not a panic.
        let bytes = postcard::to_allocvec(&bss[0]).unwrap();
        for n in 0..bytes.len() {
            assert!(postcard::from_bytes::<BatchSignature>(&bytes[..n]).is_err());
        }
    }

    /// Rough timings. Run with:
    /// `cargo test -p pistou-crypto --release -- --ignored --nocapture measure`
    #[test]
    #[ignore]
    fn measure() {
        let k = SecretKey::from_seed([1; 32]);
        let pk = k.public();
        let msg = [7u8; 47];
        let n = 2000;

        let t = Instant::now();
        let mut sig = k.sign(&msg);
        for i in 0..n {
            sig = k.sign(&[i as u8; 47]);
        }
        let sign_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let _ = sig;

        let sig = k.sign(&msg);
        let t = Instant::now();
        for _ in 0..n {
            verify(&pk, &msg, &sig).unwrap();
        }
        let verify_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;

        // Reference: ed25519-dalek's own (cofactorless) verify_strict, same inputs.
        let vk = ed25519_dalek::VerifyingKey::from_bytes(&pk.0).unwrap();
        let dsig = ed25519_dalek::Signature::from_bytes(&sig.0);
        let t = Instant::now();
        for _ in 0..n {
            vk.verify_strict(&msg, &dsig).unwrap();
        }
        let dalek_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;

        let keys: Vec<SecretKey> = (0..64u8).map(|i| SecretKey::from_seed([i; 32])).collect();
        let pks: Vec<PublicKey> = keys.iter().map(|k| k.public()).collect();
        let msgs: Vec<[u8; 47]> = (0..64u8).map(|i| [i; 47]).collect();
        let sigs: Vec<Signature> = keys.iter().zip(&msgs).map(|(k, m)| k.sign(m)).collect();
        let items: Vec<(&PublicKey, &[u8], &Signature)> =
            (0..64).map(|i| (&pks[i], msgs[i].as_slice(), &sigs[i])).collect();
        let reps = 60;
        let t = Instant::now();
        for _ in 0..reps {
            verify_batch(&items).unwrap();
        }
        let batch_item_us = t.elapsed().as_secs_f64() * 1e6 / (reps * 64) as f64;

        let s = BatchSigner::new(SecretKey::from_seed([2; 32]), 64);
        let ps = payloads(64, 9);
        let bss = s.sign_batch(&ps);
        let mut cache = VerifyCache::new(1024);
        verify_batched(&s.public(), &ps[0], &bss[0], &mut cache).unwrap();
        let reps = 20_000;
        let t = Instant::now();
        for i in 0..reps {
            let j = i % 64;
            verify_batched(&s.public(), &ps[j], &bss[j], &mut cache).unwrap();
        }
        let hit_us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
        assert_eq!(cache.misses(), 1);

        let t = Instant::now();
        for _ in 0..200 {
            let _ = s.sign_batch(&ps);
        }
        let sign_batch_item_us = t.elapsed().as_secs_f64() * 1e6 / (200 * 64) as f64;

        println!("sign:                      {sign_us:8.2} us");
        println!("verify:                    {verify_us:8.2} us");
        println!("(dalek verify_strict:      {dalek_us:8.2} us, key pre-decoded)");
        println!("verify_batch (64) / item:  {batch_item_us:8.2} us");
        println!("verify_batched cache hit:  {hit_us:8.2} us (depth-6 proof)");
        println!("sign_batch (64) / item:    {sign_batch_item_us:8.2} us");
    }
}
