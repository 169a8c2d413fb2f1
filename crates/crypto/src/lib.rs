//! Pistou cryptography: ed25519, BLAKE3, Merkle-batched signatures, verification cache.
//!
//! # Pieces
//!
//! * [`hash`] / [`hash_parts`]: BLAKE3. `hash_parts` length-prefixes every part so that
//!   `["ab", "c"]` and `["a", "bc"]` never collide.
//! * [`SecretKey`], [`PublicKey`], [`Signature`], [`verify`], [`verify_batch`]: ed25519.
//! * [`merkle_root_and_proofs`] / [`merkle_root_from_proof`]: binary Merkle trees.
//! * [`Ephemeral`], [`SessionKey`]: X25519 session keys and BLAKE3 frame tags for
//!   authenticated client connections (`session.rs`).
//! * [`BatchSigner`], [`BatchSignature`], [`VerifyCache`], [`verify_batched`],
//!   [`verify_batched_many`]: Basil's reply batching (SOSP'21 §4.4).
//!
//! # Reply batching (Basil §4.4)
//!
//! A replica that has `b` replies to send does not sign each of them. It hashes each
//! reply payload, builds a Merkle tree over the `b` payload hashes and signs only the
//! root, with the domain-separated message `b"pistou-batch-v1" || root`. Each client
//! receives its reply together with a [`BatchSignature`]: the root, the single signature
//! and the Merkle path (`log2 b` sibling hashes) from its payload hash to the root.
//! Signing cost drops by a factor `b`; message size grows by `32 * ceil(log2 b)` bytes.
//! [`BatchSigner::sign_batch`] splits its input into chunks of at most `max_batch`
//! payloads, one tree and one signature per chunk.
//!
//! Tree shape: leaf node = `H(0x00 || payload_hash)`, inner node = `H(0x01 || left || right)`.
//! The distinct prefixes stop a leaf from being passed off as an inner node (second
//! preimage across levels). When a level has an odd number of nodes, the last node is
//! **duplicated** (paired with itself). So every leaf of an `n`-leaf tree has exactly
//! `ceil(log2 n)` siblings and `proof.index` is the leaf's real position, whose bits say
//! left/right at each level. (Known consequence of duplication: a tree `[a, b, c]` has
//! the same root as `[a, b, c, c]`, so `c` also "verifies" at index 3. That is harmless
//! here: a proof only ever claims "the signer signed a batch containing this payload",
//! which is true, and nobody interprets the index.)
//!
//! # Why the verification cache is safe
//!
//! Verifying the signature is the expensive part (tens of µs); recomputing a Merkle
//! path is a handful of BLAKE3 calls. When a replica receives many messages carrying
//! replies from the same batch (e.g. a client forwarding `f+1` replies, each from a
//! different batch of the same replicas over time), the same `(signer, root, signature)`
//! recurs. [`VerifyCache`] remembers triples whose signature verified. On a hit,
//! [`verify_batched`] skips ed25519 but **still recomputes the root from the payload hash
//! and the proof and compares it with `bs.root`**. This is exactly what §4.4 requires:
//! the cache certifies only "signer signed this root" — a fact that does not depend on the
//! payload — while the binding of *this* payload to that root is checked every time. A
//! forged payload or proof therefore still fails even when the signature is cached, and
//! the cache can only store triples that actually verified, so an attacker cannot
//! poison it. Entries are keyed on the full signature too, so a cached root does not make
//! a different (bogus) signature over the same root pass. The cache is bounded
//! (FIFO eviction), so a flood of distinct valid batches costs memory `O(capacity)`.
//!
//! # Verification rule (why not `ed25519_dalek::verify_strict` + `verify_batch`)
//!
//! In a BFT system every correct node must reach the same verdict on a signature,
//! whether it checked it alone or inside a batch; otherwise a Byzantine signer can craft
//! a signature that some replicas accept and others reject. `ed25519-dalek` 2.x
//! `verify_strict` is *cofactorless* while its `verify_batch` is a randomised
//! cofactorless check whose verdict on signatures with small-order components depends on
//! the batch's random coefficients, so the two disagree on crafted inputs
//! (Chalkias et al., "Taming the many EdDSAs", 2020). We therefore implement the
//! ZIP-215-style *cofactored* equation `[8](s·B − R − k·A) = 0` for both [`verify`] and
//! [`verify_batch`], which makes batch and single verification agree (up to 2^-128), and
//! on top of it keep the strictness checks that matter:
//!
//! * `s` must be canonical (`s < ℓ`): no `s + ℓ` malleability;
//! * `A` and `R` must be canonical encodings (`y < p`, no "−0");
//! * `A` and `R` must not be of small order (a small-order `A` would make a signature
//!   valid for every message under the cofactored equation).
//!
//! Every signature produced by an RFC 8032 signer (including ours) passes. The only
//! signatures accepted here but rejected by dalek's `verify_strict` are ones whose
//! creator deliberately mixed torsion into `R` or `A`; they still require the secret key.

#![deny(clippy::iter_over_hash_type, clippy::disallowed_methods)]

mod batch;
mod merkle;
mod session;
mod sig;

pub use batch::{
    batch_message, verify_batched, verify_batched_many, BatchSignature, BatchSigner, VerifyCache, BATCH_DOMAIN,
};
pub use merkle::{merkle_root_and_proofs, merkle_root_from_proof, MerkleProof, MAX_PROOF_DEPTH};
pub use session::{Ephemeral, SessionKey, TAG_LEN};
pub use sig::{verify, verify_batch, PublicKey, SecretKey, Signature};

/// A 32-byte BLAKE3 digest.
pub type Hash = [u8; 32];

/// BLAKE3 of `bytes`.
pub fn hash(bytes: &[u8]) -> Hash {
    *blake3::hash(bytes).as_bytes()
}

/// BLAKE3 over the number of parts and each part prefixed by its length (u64 LE), so the
/// encoding of the list is injective: different part lists never hash the same input.
pub fn hash_parts(parts: &[&[u8]]) -> Hash {
    let mut h = blake3::Hasher::new();
    h.update(&(parts.len() as u64).to_le_bytes());
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    *h.finalize().as_bytes()
}

/// Errors of this crate. All are "reject the input"; none is an internal failure.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CryptoError {
    #[error("bad signature")]
    BadSignature,
    #[error("bad public key")]
    BadPublicKey,
    #[error("bad hex encoding")]
    BadHex,
    #[error("bad Merkle proof")]
    BadProof,
    #[error("Merkle proof deeper than {MAX_PROOF_DEPTH}")]
    ProofTooDeep,
    #[error("bad session tag")]
    BadTag,
    #[error("the operating system has no randomness source")]
    NoRandomness,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_blake3() {
        assert_eq!(hash(b"abc"), *blake3::hash(b"abc").as_bytes());
    }

    #[test]
    fn hash_parts_is_unambiguous() {
        assert_ne!(hash_parts(&[b"ab", b"c"]), hash_parts(&[b"a", b"bc"]));
        assert_ne!(hash_parts(&[b"abc"]), hash_parts(&[b"abc", b""]));
        assert_ne!(hash_parts(&[]), hash_parts(&[b""]));
        assert_eq!(hash_parts(&[b"x", b"y"]), hash_parts(&[b"x", b"y"]));
    }
}
