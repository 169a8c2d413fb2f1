//! Binary Merkle trees over payload hashes, with leaf/node domain separation and
//! duplication of the last node on odd levels (see crate docs).

use serde::{Deserialize, Serialize};

use crate::{CryptoError, Hash};

/// Largest accepted number of siblings in a proof: 2^32 leaves, matching the `u32` index.
/// Bounds the work a hostile proof can cause.
pub const MAX_PROOF_DEPTH: usize = 32;

/// Path from a leaf to the root: `siblings[0]` is the leaf's sibling, the last one is the
/// root's child. Bit `i` of `index` is 1 when the running node is the *right* child at
/// level `i`. `index` is the leaf's position in the tree.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct MerkleProof {
    pub index: u32,
    pub siblings: Vec<Hash>,
}

const LEAF_TAG: u8 = 0x00;
const NODE_TAG: u8 = 0x01;

fn leaf_node(payload_hash: &Hash) -> Hash {
    let mut h = blake3::Hasher::new();
    h.update(&[LEAF_TAG]);
    h.update(payload_hash);
    *h.finalize().as_bytes()
}

fn inner_node(left: &Hash, right: &Hash) -> Hash {
    let mut h = blake3::Hasher::new();
    h.update(&[NODE_TAG]);
    h.update(left);
    h.update(right);
    *h.finalize().as_bytes()
}

/// Root of the tree over `leaves` (payload hashes) and one proof per leaf, in order.
///
/// One leaf: root = `H(0x00 || leaf)`, proof with no siblings. No leaves: root is all
/// zeros and there are no proofs (no proof can lead to it, barring a BLAKE3 preimage).
/// Callers must not pass more than 2^32 leaves (the index is a `u32`); extra leaves get
/// no proof, so the output is never wrong, only short.
pub fn merkle_root_and_proofs(leaves: &[Hash]) -> (Hash, Vec<MerkleProof>) {
    if leaves.is_empty() {
        return ([0u8; 32], Vec::new());
    }
    let n = leaves.len().min(1usize << MAX_PROOF_DEPTH.min(usize::BITS as usize - 1));
    let leaves = &leaves[..n];
    let mut proofs: Vec<MerkleProof> = (0..n).map(|i| MerkleProof { index: i as u32, siblings: Vec::new() }).collect();
    let mut level: Vec<Hash> = leaves.iter().map(leaf_node).collect();
    // Position of each leaf's ancestor in the current level is `leaf_index >> depth`.
    let mut depth = 0u32;
    while level.len() > 1 {
        for (i, p) in proofs.iter_mut().enumerate() {
            let pos = i >> depth;
            let sib = pos ^ 1;
            // Odd level: the last node is paired with itself.
            p.siblings.push(*level.get(sib).unwrap_or(&level[pos]));
        }
        level = level
            .chunks(2)
            .map(|c| {
                // chunks(2) yields 1 or 2 items; a lone last node is paired with itself.
                let l = &c[0];
                inner_node(l, c.get(1).unwrap_or(l))
            })
            .collect();
        depth += 1;
    }
    (level[0], proofs)
}

/// Recompute the root from a payload hash and a proof. Rejects proofs with more than
/// [`MAX_PROOF_DEPTH`] siblings and indices that do not fit in `siblings.len()` bits
/// (so every proof has one canonical index). Does not compare with any expected root.
pub fn merkle_root_from_proof(leaf: &Hash, proof: &MerkleProof) -> Result<Hash, CryptoError> {
    let depth = proof.siblings.len();
    if depth > MAX_PROOF_DEPTH {
        return Err(CryptoError::ProofTooDeep);
    }
    if depth < 32 && (proof.index >> depth) != 0 {
        return Err(CryptoError::BadProof);
    }
    let mut node = leaf_node(leaf);
    for (level, sib) in proof.siblings.iter().enumerate() {
        node = if (proof.index >> level) & 1 == 0 { inner_node(&node, sib) } else { inner_node(sib, &node) };
    }
    Ok(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash;
    use proptest::prelude::*;

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n).map(|i| hash(&(i as u64).to_le_bytes())).collect()
    }

    #[test]
    fn every_leaf_of_trees_1_to_33_verifies_and_tampering_fails() {
        for n in 1..=33usize {
            let ls = leaves(n);
            let (root, proofs) = merkle_root_and_proofs(&ls);
            assert_eq!(proofs.len(), n);
            let expected_depth = (n as f64).log2().ceil() as usize;
            for (i, (leaf, proof)) in ls.iter().zip(&proofs).enumerate() {
                assert_eq!(proof.index as usize, i);
                assert_eq!(proof.siblings.len(), expected_depth, "n={n} i={i}");
                assert_eq!(merkle_root_from_proof(leaf, proof), Ok(root), "n={n} i={i}");

                // Wrong leaf.
                let mut bad_leaf = *leaf;
                bad_leaf[0] ^= 1;
                assert_ne!(merkle_root_from_proof(&bad_leaf, proof), Ok(root));
                // Another leaf of the same tree with this proof.
                if n > 1 {
                    let other = &ls[(i + 1) % n];
                    if other != leaf {
                        assert_ne!(merkle_root_from_proof(other, proof), Ok(root));
                    }
                }
                // Modified sibling.
                for s in 0..proof.siblings.len() {
                    let mut p = proof.clone();
                    p.siblings[s][31] ^= 0x80;
                    assert_ne!(merkle_root_from_proof(leaf, &p), Ok(root), "n={n} i={i} s={s}");
                }
                // Modified index: flipping a bit swaps left/right at that level, which
                // changes the root unless the sibling equals the node (duplicated last
                // node), where left/right are interchangeable by construction.
                for b in 0..proof.siblings.len() {
                    let mut p = proof.clone();
                    p.index ^= 1 << b;
                    let got = merkle_root_from_proof(leaf, &p);
                    let self_paired = (i >> b) ^ 1 >= n.div_ceil(1 << b);
                    if !self_paired {
                        assert_ne!(got, Ok(root), "n={n} i={i} bit={b}");
                    }
                }
                // Index beyond the depth.
                let mut p = proof.clone();
                p.index |= 1 << proof.siblings.len();
                assert_eq!(merkle_root_from_proof(leaf, &p), Err(CryptoError::BadProof));
                // Dropped or extra sibling.
                if !proof.siblings.is_empty() {
                    let mut p = proof.clone();
                    p.siblings.pop();
                    p.index &= (1u32 << p.siblings.len()) - 1;
                    assert_ne!(merkle_root_from_proof(leaf, &p), Ok(root));
                }
                let mut p = proof.clone();
                p.siblings.push([0u8; 32]);
                assert_ne!(merkle_root_from_proof(leaf, &p), Ok(root));
            }
        }
    }

    #[test]
    fn single_leaf_and_empty() {
        let l = hash(b"x");
        let (root, proofs) = merkle_root_and_proofs(&[l]);
        assert_eq!(proofs, vec![MerkleProof { index: 0, siblings: vec![] }]);
        assert_eq!(root, leaf_node(&l));
        assert_ne!(root, l, "leaf is domain-separated from the payload hash");
        let (root, proofs) = merkle_root_and_proofs(&[]);
        assert_eq!(root, [0u8; 32]);
        assert!(proofs.is_empty());
    }

    #[test]
    fn inner_node_cannot_pose_as_leaf() {
        let ls = leaves(2);
        let (root, _) = merkle_root_and_proofs(&ls);
        // Claim the concatenation-level: a proof of depth 0 for some "leaf" giving root.
        let p = MerkleProof { index: 0, siblings: vec![] };
        assert_ne!(merkle_root_from_proof(&leaf_node(&ls[0]), &p), Ok(root));
    }

    #[test]
    fn hostile_depth_and_index() {
        let leaf = hash(b"x");
        let deep = MerkleProof { index: 0, siblings: vec![[0u8; 32]; MAX_PROOF_DEPTH + 1] };
        assert_eq!(merkle_root_from_proof(&leaf, &deep), Err(CryptoError::ProofTooDeep));
        let huge = MerkleProof { index: 0, siblings: vec![[0u8; 32]; 1_000_000] };
        assert_eq!(merkle_root_from_proof(&leaf, &huge), Err(CryptoError::ProofTooDeep));
        let max = MerkleProof { index: u32::MAX, siblings: vec![[0u8; 32]; MAX_PROOF_DEPTH] };
        assert!(merkle_root_from_proof(&leaf, &max).is_ok());
        let p = MerkleProof { index: u32::MAX, siblings: vec![[0u8; 32]; 31] };
        assert_eq!(merkle_root_from_proof(&leaf, &p), Err(CryptoError::BadProof));
        let p = MerkleProof { index: 1, siblings: vec![] };
        assert_eq!(merkle_root_from_proof(&leaf, &p), Err(CryptoError::BadProof));
    }

    proptest! {
        #[test]
        fn random_trees(seeds in proptest::collection::vec(any::<[u8; 32]>(), 1..80),
                        pick in any::<usize>(), flip in any::<(usize, u8)>()) {
            let (root, proofs) = merkle_root_and_proofs(&seeds);
            prop_assert_eq!(proofs.len(), seeds.len());
            for (l, p) in seeds.iter().zip(&proofs) {
                prop_assert_eq!(merkle_root_from_proof(l, p), Ok(root));
            }
            // A tampered leaf never verifies.
            let i = pick % seeds.len();
            let mut l = seeds[i];
            l[flip.0 % 32] ^= flip.1 | 1;
            prop_assert_ne!(merkle_root_from_proof(&l, &proofs[i]), Ok(root));
        }

        #[test]
        fn arbitrary_proofs_never_panic(leaf in any::<[u8; 32]>(), index in any::<u32>(),
                                        sibs in proptest::collection::vec(any::<[u8; 32]>(), 0..40)) {
            let p = MerkleProof { index, siblings: sibs };
            let _ = merkle_root_from_proof(&leaf, &p);
        }
    }
}
