//! The simulated network: a priority queue of deliveries ordered by (time, sequence).

use pistou_core::ReplicaId;
use pistou_wire::Message;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Node {
    Replica(ReplicaId),
    Client(usize),
}

#[derive(Debug)]
pub enum Event {
    Deliver { from: Node, to: Node, frame: Vec<u8> },
    Tick(Node),
}

/// Events keyed by (time, insertion sequence): ties resolve in insertion order, so a run
/// is a pure function of its seed.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slots: Vec<Option<Event>>,
    free: Vec<usize>,
    seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, at: u64, ev: Event) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(ev);
                i
            }
            None => {
                self.slots.push(Some(ev));
                self.slots.len() - 1
            }
        };
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, slot)));
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let Reverse((at, _, slot)) = self.heap.pop()?;
        let ev = self.slots.get_mut(slot)?.take()?;
        self.free.push(slot);
        Some((at, ev))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// Encodes a message as it would travel on a socket; the receiver decodes it.
pub fn to_frame(msg: &Message) -> Vec<u8> {
    pistou_wire::encode_message(msg)
}
