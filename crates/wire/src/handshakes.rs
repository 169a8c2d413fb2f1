//! Slots of connections still in their handshake, for the replicas' and the gateway's
//! listeners (issue 33). There are few of them, apart from authenticated connections' slots. When all are taken, a new connection takes the
//! slot of the oldest one, which is closed: sockets that never authenticate cannot lock new
//! clients out, they only shorten the time a handshake has while they flood (a real one
//! needs a round trip and a signature check).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

pub struct Handshakes {
    max: usize,
    /// Connections in their handshake, oldest first: (ticket number, its eviction notice).
    waiting: Mutex<VecDeque<(u64, oneshot::Sender<()>)>>,
    next: std::sync::atomic::AtomicU64,
}

/// A connection's handshake slot; dropping it frees the slot.
pub struct HandshakeTicket {
    number: u64,
    handshakes: Arc<Handshakes>,
    /// Completes when a newer connection took the slot.
    pub evicted: oneshot::Receiver<()>,
}

impl Handshakes {
    pub fn new(max: usize) -> Arc<Handshakes> {
        Arc::new(Handshakes { max: max.max(1), waiting: Mutex::default(), next: Default::default() })
    }

    /// A slot for a new connection, and whether it evicted the oldest one to get it.
    pub fn take(self: &Arc<Self>) -> (HandshakeTicket, bool) {
        let number = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (notice, evicted) = oneshot::channel();
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let full = waiting.len() >= self.max;
        if full {
            if let Some((_, oldest)) = waiting.pop_front() {
                let _ = oldest.send(());
            }
        }
        waiting.push_back((number, notice));
        (HandshakeTicket { number, handshakes: self.clone(), evicted }, full)
    }

    fn release(&self, number: u64) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        // Tickets are numbered in order: the one to remove is found by binary search.
        if let Ok(i) = waiting.binary_search_by_key(&number, |(n, _)| *n) {
            waiting.remove(i);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

impl Drop for HandshakeTicket {
    fn drop(&mut self) {
        self.handshakes.release(self.number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_connection_takes_the_oldest_slot_when_all_are_taken() {
        let h = Handshakes::new(2);
        let (mut a, evicted_a) = h.take();
        let (mut b, _) = h.take();
        assert!(!evicted_a);
        let (mut c, evicted) = h.take();
        assert!(evicted, "the third connection evicted one");
        assert!(a.evicted.try_recv().is_ok(), "the oldest was told");
        assert!(b.evicted.try_recv().is_err() && c.evicted.try_recv().is_err());
        assert_eq!(h.len(), 2);
        drop(a);
        assert_eq!(h.len(), 2, "an evicted ticket is already out");
        drop(b);
        assert_eq!(h.len(), 1, "a finished handshake frees its slot");
        let (_d, evicted) = h.take();
        assert!(!evicted);
        drop(c);
        assert_eq!(h.len(), 1);
    }
}
