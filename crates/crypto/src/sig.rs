//! ed25519 keys, signing, and the verification rule described in the crate docs.

use std::fmt;

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use ed25519_dalek::Signer as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha512};

use crate::CryptoError;

/// An ed25519 public key (compressed Edwards point). Not validated on construction:
/// [`verify`] rejects non-canonical or small-order keys.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PublicKey(pub [u8; 32]);

impl PublicKey {
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn from_hex(s: &str) -> Result<PublicKey, CryptoError> {
        Ok(PublicKey(decode_hex_32(s)?))
    }

    /// True iff this is a key [`verify`] can accept signatures from (canonical
    /// encoding of a curve point that is not of small order).
    pub fn is_valid(&self) -> bool {
        decode_point(&self.0).is_some()
    }
}

// Short hex (first 4 bytes) keeps logs readable; full value via `to_hex`.
impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", hex::encode(&self.0[..4]))
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(&self.0[..4]))
    }
}

/// An ed25519 signature: `R` (32 bytes) || `s` (32 bytes).
///
/// Serde: a fixed 64-element tuple of bytes (postcard: exactly 64 raw bytes, no length).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signature(pub [u8; 64]);

impl Signature {
    pub fn to_bytes(&self) -> [u8; 64] {
        self.0
    }
    pub fn from_bytes(bytes: [u8; 64]) -> Self {
        Signature(bytes)
    }
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
    pub fn from_hex(s: &str) -> Result<Signature, CryptoError> {
        let mut out = [0u8; 64];
        hex::decode_to_slice(s, &mut out).map_err(|_| CryptoError::BadHex)?;
        Ok(Signature(out))
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({})", hex::encode(&self.0[..4]))
    }
}

impl Serialize for Signature {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = serializer.serialize_tuple(64)?;
        for b in &self.0 {
            t.serialize_element(b)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for Signature {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Signature;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("64 bytes")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Signature, A::Error> {
                let mut out = [0u8; 64];
                for (i, b) in out.iter_mut().enumerate() {
                    *b = seq.next_element()?.ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                }
                Ok(Signature(out))
            }
        }
        deserializer.deserialize_tuple(64, V)
    }
}

/// An ed25519 secret key (32-byte seed). No `Debug`/`Display`/`Serialize`, so it does
/// not leak into logs by accident; the inner key is zeroized on drop by ed25519-dalek.
#[derive(Clone)]
pub struct SecretKey(ed25519_dalek::SigningKey);

impl SecretKey {
    /// A fresh key from OS randomness.
    ///
    /// Panics only if the OS has no randomness source at all, in which case no key can
    /// be generated safely (this is not reachable from network input).
    pub fn generate() -> SecretKey {
        let mut seed = [0u8; 32];
        #[allow(clippy::expect_used)]
        getrandom::getrandom(&mut seed).expect("OS randomness unavailable");
        let k = SecretKey::from_seed(seed);
        seed.fill(0);
        k
    }

    /// Deterministic key from a 32-byte seed (RFC 8032 secret key).
    pub fn from_seed(seed: [u8; 32]) -> SecretKey {
        SecretKey(ed25519_dalek::SigningKey::from_bytes(&seed))
    }

    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key().to_bytes())
    }

    /// RFC 8032 (deterministic) ed25519 signature.
    pub fn sign(&self, msg: &[u8]) -> Signature {
        Signature(self.0.sign(msg).to_bytes())
    }

    /// Hex of the 32-byte seed.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.to_bytes())
    }

    pub fn from_hex(s: &str) -> Result<SecretKey, CryptoError> {
        let mut seed = decode_hex_32(s.trim())?;
        let k = SecretKey::from_seed(seed);
        seed.fill(0);
        Ok(k)
    }
}

fn decode_hex_32(s: &str) -> Result<[u8; 32], CryptoError> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).map_err(|_| CryptoError::BadHex)?;
    Ok(out)
}

/// `y < p = 2^255 - 19` on the 255-bit y coordinate (bit 255 is the sign of x).
/// Non-canonical y encodings are the 19 values `p..2^255`.
fn y_is_canonical(b: &[u8; 32]) -> bool {
    // y >= p iff the top byte (sans sign) is 0x7f, bytes 1..31 are 0xff and byte 0 >= 0xed.
    !(b[31] & 0x7f == 0x7f && b[1..31].iter().all(|&x| x == 0xff) && b[0] >= 0xed)
}

/// Decode a point for verification: canonical encoding, on the curve, not small order.
/// (The only encodings with x = 0, where a set sign bit would be a second "−0" encoding,
/// are the small-order points (0, ±1), so they are rejected by the small-order check.)
fn decode_point(b: &[u8; 32]) -> Option<EdwardsPoint> {
    if !y_is_canonical(b) {
        return None;
    }
    let p = CompressedEdwardsY(*b).decompress()?;
    if p.is_small_order() {
        return None;
    }
    Some(p)
}

/// Decompressed public keys seen by this thread. Signers are the few replicas and clients of
/// the configuration, so decompressing their keys (a square root, about a fifth of a
/// verification) once per thread saves that work on every signature. Decompression is a pure
/// function of the bytes and only keys that pass every check are kept, so the cache cannot
/// change any verdict. Bounded: cleared when full.
const KEY_CACHE_CAPACITY: usize = 4096;

thread_local! {
    static KEY_POINTS: std::cell::RefCell<std::collections::HashMap<[u8; 32], EdwardsPoint>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

fn decode_public_key(pk: &[u8; 32]) -> Option<EdwardsPoint> {
    KEY_POINTS.with(|cache| {
        if let Some(p) = cache.borrow().get(pk) {
            return Some(*p);
        }
        let p = decode_point(pk)?;
        let mut cache = cache.borrow_mut();
        if cache.len() >= KEY_CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(*pk, p);
        Some(p)
    })
}

/// A signature and key decoded and checked for everything except the group equation.
struct Prepared {
    a: EdwardsPoint,
    r: EdwardsPoint,
    s: Scalar,
    k: Scalar,
}

fn prepare(pk: &PublicKey, msg: &[u8], sig: &Signature) -> Result<Prepared, CryptoError> {
    let a = decode_public_key(&pk.0).ok_or(CryptoError::BadPublicKey)?;
    let mut r_bytes = [0u8; 32];
    let mut s_bytes = [0u8; 32];
    r_bytes.copy_from_slice(&sig.0[..32]);
    s_bytes.copy_from_slice(&sig.0[32..]);
    let r = decode_point(&r_bytes).ok_or(CryptoError::BadSignature)?;
    let s: Option<Scalar> = Scalar::from_canonical_bytes(s_bytes).into();
    let s = s.ok_or(CryptoError::BadSignature)?;
    // k = SHA-512(R || A || M) mod ℓ, as in RFC 8032.
    let mut h = Sha512::new();
    h.update(r_bytes);
    h.update(pk.0);
    h.update(msg);
    let mut wide = [0u8; 64];
    wide.copy_from_slice(&h.finalize());
    let k = Scalar::from_bytes_mod_order_wide(&wide);
    Ok(Prepared { a, r, s, k })
}

/// Verify an ed25519 signature: strict encodings (canonical `s`, `R`, `A`; no small-order
/// `R` or `A`) and the cofactored equation `[8](s·B − k·A − R) = 0`. Agrees with
/// [`verify_batch`] on every input; see the crate docs for why it is cofactored.
pub fn verify(pk: &PublicKey, msg: &[u8], sig: &Signature) -> Result<(), CryptoError> {
    let p = prepare(pk, msg, sig)?;
    // s·B − k·A
    let sb_minus_ka = EdwardsPoint::vartime_double_scalar_mul_basepoint(&(-p.k), &p.a, &p.s);
    if (sb_minus_ka - p.r).mul_by_cofactor().is_identity() {
        Ok(())
    } else {
        Err(CryptoError::BadSignature)
    }
}

/// Batch-verify ed25519 signatures: `Ok` iff every item would pass [`verify`] (except
/// with probability ≤ 2^-128 over the random coefficients). Empty input is `Ok`. On
/// failure it does not say which item failed; call [`verify`] per item for that.
///
/// Checks `[8]·Σ z_i(s_i·B − R_i − k_i·A_i) = 0` with independent random 128-bit `z_i`.
pub fn verify_batch(items: &[(&PublicKey, &[u8], &Signature)]) -> Result<(), CryptoError> {
    match items {
        [] => return Ok(()),
        [(pk, msg, sig)] => return verify(pk, msg, sig),
        _ => {}
    }
    let prepared = items.iter().map(|(pk, msg, sig)| prepare(pk, msg, sig)).collect::<Result<Vec<_>, _>>()?;
    let zs = batch_coefficients(items);

    // Σ z_i s_i on B, −z_i on R_i, −z_i k_i on A_i.
    let b_coeff: Scalar = prepared.iter().zip(&zs).map(|(p, z)| z * p.s).sum();
    let mut scalars = Vec::with_capacity(1 + 2 * prepared.len());
    let mut points = Vec::with_capacity(1 + 2 * prepared.len());
    scalars.push(b_coeff);
    points.push(ED25519_BASEPOINT_POINT);
    for (p, z) in prepared.iter().zip(&zs) {
        scalars.push(-z);
        points.push(p.r);
        scalars.push(-(z * p.k));
        points.push(p.a);
    }
    let sum = EdwardsPoint::vartime_multiscalar_mul(scalars.iter(), points.iter());
    if sum.mul_by_cofactor().is_identity() {
        Ok(())
    } else {
        Err(CryptoError::BadSignature)
    }
}

/// Random 128-bit coefficients, one per item. Drawn from BLAKE3 keyed by OS randomness
/// and bound to the whole batch (like merlin transcripts in dalek), so that even if the
/// OS RNG failed the coefficients still depend on every input and are not chosen by the
/// attacker. (With OS randomness working they are unpredictable to the attacker.)
fn batch_coefficients(items: &[(&PublicKey, &[u8], &Signature)]) -> Vec<Scalar> {
    let mut key = [0u8; 32];
    // Failure leaves `key` zero: we still bind to the inputs below rather than panic.
    let _ = getrandom::getrandom(&mut key);
    let mut h = blake3::Hasher::new_keyed(&key);
    h.update(b"pistou-batch-verify-v1");
    for (pk, msg, sig) in items {
        h.update(&pk.0);
        h.update(&sig.0);
        h.update(&(msg.len() as u64).to_le_bytes());
        h.update(msg);
    }
    let mut xof = h.finalize_xof();
    items
        .iter()
        .map(|_| {
            let mut b = [0u8; 32];
            xof.fill(&mut b[..16]);
            Scalar::from_bytes_mod_order(b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::EIGHT_TORSION;

    fn key(i: u8) -> SecretKey {
        SecretKey::from_seed([i; 32])
    }

    #[test]
    fn sign_verify_round_trip() {
        let k = key(1);
        let sig = k.sign(b"hello");
        assert_eq!(verify(&k.public(), b"hello", &sig), Ok(()));
        // Also accepted by dalek's own strict verifier (we are RFC 8032 compatible).
        let vk = ed25519_dalek::VerifyingKey::from_bytes(&k.public().0).unwrap();
        vk.verify_strict(b"hello", &ed25519_dalek::Signature::from_bytes(&sig.0)).unwrap();
    }

    #[test]
    fn rfc8032_test_vector_1() {
        // RFC 8032 §7.1 TEST 1 (empty message).
        let sk = SecretKey::from_hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60").unwrap();
        assert_eq!(sk.public().to_hex(), "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
        let sig = sk.sign(b"");
        assert_eq!(
            sig.to_hex(),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
        assert_eq!(verify(&sk.public(), b"", &sig), Ok(()));
    }

    #[test]
    fn tamper_message_signature_key() {
        let k = key(2);
        let msg = b"the quick brown fox".to_vec();
        let sig = k.sign(&msg);
        for bit in 0..msg.len() * 8 {
            let mut m = msg.clone();
            m[bit / 8] ^= 1 << (bit % 8);
            assert!(verify(&k.public(), &m, &sig).is_err(), "msg bit {bit}");
        }
        for bit in 0..512 {
            let mut s = sig;
            s.0[bit / 8] ^= 1 << (bit % 8);
            assert!(verify(&k.public(), &msg, &s).is_err(), "sig bit {bit}");
        }
        for bit in 0..256 {
            let mut pk = k.public();
            pk.0[bit / 8] ^= 1 << (bit % 8);
            assert!(verify(&pk, &msg, &sig).is_err(), "key bit {bit}");
        }
        assert!(verify(&key(3).public(), &msg, &sig).is_err());
    }

    #[test]
    fn rejects_non_canonical_s() {
        let k = key(4);
        let sig = k.sign(b"m");
        // s + ℓ: same group equation, different encoding -> must be rejected.
        let mut s = [0u8; 32];
        s.copy_from_slice(&sig.0[32..]);
        // ℓ = 2^252 + 27742317777372353535851937790883648493, little-endian.
        let mut l = [0u8; 32];
        hex::decode_to_slice("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010", &mut l).unwrap();
        let mut carry = 0u16;
        let mut out = [0u8; 32];
        for i in 0..32 {
            let v = s[i] as u16 + l[i] as u16 + carry;
            out[i] = v as u8;
            carry = v >> 8;
        }
        assert_eq!(carry, 0);
        let mut bad = sig;
        bad.0[32..].copy_from_slice(&out);
        assert_eq!(verify(&k.public(), b"m", &bad), Err(CryptoError::BadSignature));
        assert!(verify_batch(&[(&k.public(), b"m", &bad), (&k.public(), b"m", &sig)]).is_err());
    }

    #[test]
    fn rejects_small_order_and_non_canonical_keys() {
        let sig = key(5).sign(b"m");
        for t in EIGHT_TORSION.iter() {
            let pk = PublicKey(t.compress().0);
            assert!(!pk.is_valid());
            assert_eq!(verify(&pk, b"m", &sig), Err(CryptoError::BadPublicKey));
        }
        // Identity key with the all-zero-ish forged signature (R = identity, s = 0) is the
        // classic "valid for every message" trap.
        let id = PublicKey(EIGHT_TORSION[0].compress().0);
        let mut forged = [0u8; 64];
        forged[..32].copy_from_slice(&EIGHT_TORSION[0].compress().0);
        assert!(verify(&id, b"anything", &Signature(forged)).is_err());
        // y = p (non-canonical encoding of y = 0).
        let mut p = [0xffu8; 32];
        p[0] = 0xed;
        p[31] = 0x7f;
        assert!(!y_is_canonical(&p));
        assert!(!PublicKey(p).is_valid());
        let mut below = p;
        below[0] = 0xec;
        assert!(y_is_canonical(&below));
        assert!(key(5).public().is_valid());
    }

    /// A signature whose R carries a torsion component, made with a known secret scalar.
    /// Cofactorless verifiers (dalek `verify_strict`) reject it; cofactored accept. What
    /// matters for BFT is that our single and batch verification agree on it.
    fn torsion_signature(msg: &[u8], t: usize) -> (PublicKey, Signature) {
        torsion_signature_ex(msg, 0, t)
    }

    /// `ta`/`tr`: index of the 8-torsion point mixed into A / R (0 = none).
    fn torsion_signature_ex(msg: &[u8], ta: usize, tr: usize) -> (PublicKey, Signature) {
        let a = Scalar::from_bytes_mod_order([7u8; 32]);
        let big_a = ED25519_BASEPOINT_POINT * a + EIGHT_TORSION[ta];
        let pk = PublicKey(big_a.compress().0);
        let r = Scalar::from_bytes_mod_order([9u8; 32]);
        let big_r = ED25519_BASEPOINT_POINT * r + EIGHT_TORSION[tr];
        let r_bytes = big_r.compress().0;
        let mut h = Sha512::new();
        h.update(r_bytes);
        h.update(pk.0);
        h.update(msg);
        let mut wide = [0u8; 64];
        wide.copy_from_slice(&h.finalize());
        let k = Scalar::from_bytes_mod_order_wide(&wide);
        let s = r + k * a;
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&r_bytes);
        sig[32..].copy_from_slice(&s.to_bytes());
        (pk, Signature(sig))
    }

    #[test]
    fn single_and_batch_agree_on_torsion_signatures() {
        let good = key(6);
        let gsig = good.sign(b"g");
        for t in 1..8 {
            let (pk, sig) = torsion_signature(b"t", t);
            let single = verify(&pk, b"t", &sig);
            assert_eq!(single, Ok(()), "cofactored accepts torsion in R (t={t})");
            // Many runs: the batch verdict must not depend on the random coefficients.
            for _ in 0..32 {
                let batch = verify_batch(&[(&pk, b"t", &sig), (&good.public(), b"g", &gsig)]);
                assert_eq!(batch, single);
                let batch2 = verify_batch(&[(&pk, b"t", &sig), (&pk, b"t", &sig)]);
                assert_eq!(batch2, single);
            }
        }
    }

    #[test]
    fn single_and_batch_agree_on_mixed_order_keys() {
        let good = key(6);
        let gsig = good.sign(b"g");
        for ta in 0..8 {
            for tr in 0..8 {
                let (pk, sig) = torsion_signature_ex(b"t", ta, tr);
                let single = verify(&pk, b"t", &sig);
                assert_eq!(single, Ok(()), "ta={ta} tr={tr}");
                for _ in 0..8 {
                    let batch = verify_batch(&[(&good.public(), b"g", &gsig), (&pk, b"t", &sig)]);
                    assert_eq!(batch, single);
                }
                // And a wrong message is rejected by both.
                assert!(verify(&pk, b"u", &sig).is_err());
                assert!(verify_batch(&[(&good.public(), b"g", &gsig), (&pk, b"u", &sig)]).is_err());
            }
        }
    }

    #[test]
    fn batch_rejects_small_order_key_anywhere() {
        let good = key(6);
        let gsig = good.sign(b"g");
        let weak = PublicKey(EIGHT_TORSION[3].compress().0);
        let mut forged = [0u8; 64];
        forged[..32].copy_from_slice(&(ED25519_BASEPOINT_POINT).compress().0);
        forged[32] = 1; // s = 1, R = B: sB - R = 0, and k·A vanishes under [8]
        let forged = Signature(forged);
        assert_eq!(
            verify_batch(&[(&good.public(), b"g", &gsig), (&weak, b"x", &forged)]),
            Err(CryptoError::BadPublicKey)
        );
        assert_eq!(verify(&weak, b"x", &forged), Err(CryptoError::BadPublicKey));
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_dalek_on_honest_and_random(seed in proptest::prelude::any::<[u8; 32]>(),
                                                  msg in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..100),
                                                  junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 64)) {
            let k = SecretKey::from_seed(seed);
            let sig = k.sign(&msg);
            let vk = ed25519_dalek::VerifyingKey::from_bytes(&k.public().0).unwrap();
            proptest::prop_assert!(vk.verify_strict(&msg, &ed25519_dalek::Signature::from_bytes(&sig.0)).is_ok());
            proptest::prop_assert_eq!(verify(&k.public(), &msg, &sig), Ok(()));
            let mut j = [0u8; 64];
            j.copy_from_slice(&junk);
            proptest::prop_assert!(verify(&k.public(), &msg, &Signature(j)).is_err());
            let pk_junk = PublicKey(<[u8; 32]>::try_from(&junk[..32]).unwrap());
            proptest::prop_assert!(verify(&pk_junk, &msg, &sig).is_err());
            proptest::prop_assert!(verify_batch(&[(&k.public(), &msg, &sig), (&k.public(), &msg, &Signature(j))]).is_err());
        }
    }

    #[test]
    fn batch_verify() {
        let keys: Vec<SecretKey> = (0..10).map(key).collect();
        let msgs: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; i as usize + 1]).collect();
        let sigs: Vec<Signature> = keys.iter().zip(&msgs).map(|(k, m)| k.sign(m)).collect();
        let pks: Vec<PublicKey> = keys.iter().map(|k| k.public()).collect();
        let items: Vec<(&PublicKey, &[u8], &Signature)> =
            (0..10).map(|i| (&pks[i], msgs[i].as_slice(), &sigs[i])).collect();
        assert_eq!(verify_batch(&items), Ok(()));
        assert_eq!(verify_batch(&[]), Ok(()));
        assert_eq!(verify_batch(&items[..1]), Ok(()));
        for bad in 0..10 {
            let mut s = sigs[bad];
            s.0[5] ^= 0x10;
            let mut it = items.clone();
            it[bad].2 = &s;
            assert!(verify_batch(&it).is_err(), "bad sig at {bad}");
            let mut it = items.clone();
            it[bad].1 = b"other";
            assert!(verify_batch(&it).is_err(), "bad msg at {bad}");
            let mut it = items.clone();
            it[bad].0 = &pks[(bad + 1) % 10];
            assert!(verify_batch(&it).is_err(), "bad key at {bad}");
        }
    }

    #[test]
    fn hex_round_trips() {
        let k = key(8);
        let k2 = SecretKey::from_hex(&k.to_hex()).unwrap();
        assert_eq!(k2.public(), k.public());
        assert_eq!(PublicKey::from_hex(&k.public().to_hex()), Ok(k.public()));
        let sig = k.sign(b"x");
        assert_eq!(Signature::from_hex(&sig.to_hex()), Ok(sig));
        assert_eq!(PublicKey::from_hex("zz"), Err(CryptoError::BadHex));
        assert_eq!(PublicKey::from_hex(&"00".repeat(31)), Err(CryptoError::BadHex));
        assert_eq!(PublicKey::from_hex(&"00".repeat(33)), Err(CryptoError::BadHex));
        assert!(SecretKey::from_hex("").is_err());
        assert!(Signature::from_hex(&"0".repeat(127)).is_err());
        assert_eq!(format!("{:?}", k.public()).len(), "PublicKey(".len() + 8 + 1);
        assert_eq!(format!("{}", k.public()), &k.public().to_hex()[..8]);
    }

    #[test]
    fn generate_gives_distinct_working_keys() {
        let a = SecretKey::generate();
        let b = SecretKey::generate();
        assert_ne!(a.public(), b.public());
        assert_eq!(verify(&a.public(), b"m", &a.sign(b"m")), Ok(()));
    }

    #[test]
    fn signature_postcard_and_json_round_trip() {
        let sig = key(9).sign(b"x");
        let bytes = postcard::to_allocvec(&sig).unwrap();
        assert_eq!(bytes.len(), 64, "fixed size, no length prefix");
        assert_eq!(postcard::from_bytes::<Signature>(&bytes).unwrap(), sig);
        assert!(postcard::from_bytes::<Signature>(&bytes[..63]).is_err());
        let pk = key(9).public();
        let bytes = postcard::to_allocvec(&pk).unwrap();
        assert_eq!(postcard::from_bytes::<PublicKey>(&bytes).unwrap(), pk);
    }
}
