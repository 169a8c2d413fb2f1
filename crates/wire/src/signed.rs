use crate::codec::with_canonical_bytes;
use pistou_core::{ClientId, ReplicaId};
use pistou_crypto::{hash_parts, BatchSignature, Hash, Signature};
use serde::{Deserialize, Serialize};

/// A message body that is signed. The domain tag keeps a signature over one kind of
/// body from being replayed as another kind whose encoding happens to coincide.
pub trait Signable: Serialize {
    const DOMAIN: &'static [u8];

    fn signing_hash(&self) -> Hash {
        with_canonical_bytes(self, |bytes| hash_parts(&[Self::DOMAIN, bytes]))
    }
}

/// A client request with the client's ed25519 signature over the body's signing hash.
/// `sig` is `None` only in clusters configured with `crypto = false`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSigned<T> {
    pub client: ClientId,
    pub body: T,
    pub sig: Option<Signature>,
}

/// A replica reply covered by a Merkle-batched signature (Basil §4.4).
/// `sig` is `None` only in clusters configured with `crypto = false`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaSigned<T> {
    pub signer: ReplicaId,
    pub body: T,
    pub sig: Option<BatchSignature>,
}
