//! Transport-level rejection counters (the replica counts protocol-level ones itself).

use std::sync::atomic::{AtomicU64, Ordering};

/// Why the transport dropped a connection or a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NetReason {
    /// A length prefix above the frame limit.
    FrameTooLarge,
    /// The byte stream broke mid-frame or the socket failed.
    Io,
    /// A frame that is not a valid `Message`.
    Malformed,
    /// A valid message followed by extra bytes in the same frame.
    TrailingBytes,
    /// The first frame on a connection was not `HelloClient`, `PeerOpen` or `HelloReplica`.
    MissingHello,
    /// Refused at accept time: the connection cap was reached.
    ConnectionCap,
    /// The peer did not read its replies; its connection was closed.
    SlowPeer,
    /// A `HelloReplica` naming a replica that is not in the configuration (or us).
    UnknownReplica,
    /// A message for another replica dropped because its link's queue was full.
    PeerQueueFull,
    /// A session handshake refused: unknown client, bad signature, another replica's name,
    /// or an unusable key exchange value.
    BadSession,
    /// A frame of an authenticated session whose tag is wrong (forged, altered, replayed).
    BadTag,
    /// A `HelloReplica` claim without proof in a cluster with crypto on (peers must open
    /// their connection with a signed `PeerOpen`).
    UnauthenticatedPeer,
    /// With crypto on, a client connection that did not open a session after its hello.
    NoSession,
    /// A connection still in its handshake closed for a newer one: every handshake slot
    /// was taken (`pistou_wire::Handshakes`).
    HandshakeCap,
}

impl NetReason {
    pub const ALL: [NetReason; 14] = [
        NetReason::FrameTooLarge,
        NetReason::Io,
        NetReason::Malformed,
        NetReason::TrailingBytes,
        NetReason::MissingHello,
        NetReason::ConnectionCap,
        NetReason::SlowPeer,
        NetReason::UnknownReplica,
        NetReason::PeerQueueFull,
        NetReason::BadSession,
        NetReason::BadTag,
        NetReason::UnauthenticatedPeer,
        NetReason::NoSession,
        NetReason::HandshakeCap,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            NetReason::FrameTooLarge => "frame-too-large",
            NetReason::Io => "io-error",
            NetReason::Malformed => "malformed-frame",
            NetReason::TrailingBytes => "trailing-bytes",
            NetReason::MissingHello => "missing-hello",
            NetReason::ConnectionCap => "connection-cap",
            NetReason::SlowPeer => "slow-peer",
            NetReason::UnknownReplica => "unknown-replica",
            NetReason::PeerQueueFull => "peer-queue-full",
            NetReason::BadSession => "bad-session",
            NetReason::BadTag => "bad-session-tag",
            NetReason::UnauthenticatedPeer => "unauthenticated-peer",
            NetReason::NoSession => "no-session",
            NetReason::HandshakeCap => "handshake-cap",
        }
    }
}

/// Shared by all connection tasks; atomics because they are bumped from many tasks.
#[derive(Debug, Default)]
pub struct NetCounters {
    counts: [AtomicU64; NetReason::ALL.len()],
}

impl NetCounters {
    pub fn record(&self, reason: NetReason) {
        self.counts[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn count(&self, reason: NetReason) -> u64 {
        self.counts[reason as usize].load(Ordering::Relaxed)
    }

    /// Non-zero counters, in a fixed order.
    pub fn snapshot(&self) -> Vec<(NetReason, u64)> {
        NetReason::ALL.iter().map(|r| (*r, self.count(*r))).filter(|(_, c)| *c > 0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_reason() {
        let c = NetCounters::default();
        c.record(NetReason::Malformed);
        c.record(NetReason::Malformed);
        c.record(NetReason::SlowPeer);
        assert_eq!(c.count(NetReason::Malformed), 2);
        assert_eq!(c.snapshot(), vec![(NetReason::Malformed, 2), (NetReason::SlowPeer, 1)]);
        for (i, r) in NetReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "ALL must list reasons in declaration order");
        }
    }
}
