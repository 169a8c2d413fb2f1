//! The read path of the client (Basil §3, step 3): f+1 replies, highest valid version.

use super::{Coordinator, CoordinatorEvent, ReadCandidate};
use crate::rejects::RejectReason;
use pistou_core::{Timestamp, TxnId, Value};
use pistou_wire::{CommittedRead, Decision, Dep, ReadReply, ReplicaSigned};
use std::collections::BTreeMap;

impl Coordinator {
    pub(super) fn on_read_reply(
        &mut self,
        now: u64,
        reply: ReplicaSigned<ReadReply>,
        committed: Option<CommittedRead>,
    ) -> Result<(), RejectReason> {
        let Some(&h) = self.by_ts.get(&reply.body.ts) else { return Ok(()) }; // late reply
        let key = reply.body.key.clone();
        let expected_shard = match self.txns.get(&h).and_then(|t| t.in_flight.get(&key)) {
            Some(op) => op.shard,
            None => return Ok(()), // read already complete
        };
        if reply.signer.shard != expected_shard || !self.auth.is_member(reply.signer) {
            return Err(RejectReason::NotMember);
        }
        let ts = reply.body.ts;
        let committed = match committed {
            Some(c) => match self.check_committed_read(&key, ts, c) {
                Ok(v) => Some(v),
                Err(r) => {
                    // A bad committed part is the replica's fault; its reply still counts
                    // towards f+1, without that version.
                    self.rejects.record(r);
                    None
                }
            },
            None => None,
        };
        let prepared = reply.body.prepared.clone().filter(|p| p.version < ts);
        let f1 = self.config().quorums().read_replies();
        let vouchers = self.config().quorums().prepared_vouchers();
        let Some(t) = self.txns.get_mut(&h) else { return Ok(()) };
        let Some(op) = t.in_flight.get_mut(&key) else { return Ok(()) };
        let index = reply.signer.index;
        op.replies.entry(index).or_insert(ReadCandidate { unverified: Some(reply), committed, prepared });
        if op.replies.len() < f1 {
            return Ok(());
        }
        let pending: Vec<(u32, ReplicaSigned<ReadReply>)> =
            op.replies.iter_mut().filter_map(|(i, c)| c.unverified.take().map(|r| (*i, r))).collect();
        let signed: Vec<ReplicaSigned<ReadReply>> = pending.iter().map(|(_, r)| r.clone()).collect();
        for ((i, _), result) in pending.iter().zip(self.auth.check_replicas_each(&signed)) {
            if let Err(e) = result {
                op.replies.remove(i);
                self.rejects.record(e.0);
            }
        }
        if op.replies.len() < f1 {
            return Ok(());
        }
        // The highest valid version: committed with a C-CERT, or prepared by f+1.
        let best_committed = op.replies.values().filter_map(|c| c.committed.clone()).max_by_key(|(v, _)| *v);
        // Identical (version, writer, value) triples from distinct replicas vouch together.
        let mut prepared_counts: BTreeMap<(Timestamp, TxnId, Option<Value>), usize> = BTreeMap::new();
        for p in op.replies.values().filter_map(|c| c.prepared.as_ref()) {
            *prepared_counts.entry((p.version, p.txn, p.value.clone())).or_default() += 1;
        }
        let best_prepared = prepared_counts.into_iter().filter(|(_, n)| *n >= vouchers).map(|(k, _)| k).next_back();
        let (version, value, dep) = match (best_committed, best_prepared) {
            (Some((cv, _)), Some((pv, ptx, pval))) if pv > cv => (pv, pval, Some(ptx)),
            (Some((cv, cval)), _) => (cv, cval, None),
            (None, Some((pv, ptx, pval))) => (pv, pval, Some(ptx)),
            (None, None) => (Timestamp::GENESIS, None, None),
        };
        t.in_flight.remove(&key);
        if let Some(txn) = dep {
            t.deps.insert(Dep { txn, key: key.clone(), version });
        }
        t.reads.insert(key.clone(), (version, value.clone()));
        if !self.sql_read_done(now, h) {
            self.events.push_back(CoordinatorEvent::ReadDone { txn: h, key, value });
        }
        Ok(())
    }

    /// A committed version is valid with a valid C-CERT for a writer that wrote this key
    /// below our timestamp; the value comes from the certified writer's write set.
    fn check_committed_read(
        &mut self,
        key: &[u8],
        ts: Timestamp,
        c: CommittedRead,
    ) -> Result<(Timestamp, Option<Value>), RejectReason> {
        if c.writer.ts >= ts {
            return Err(RejectReason::Misbehavior);
        }
        let Some(w) = c.writer.write_of(key) else { return Err(RejectReason::BadCertificate) };
        let value = w.value.clone();
        let id = c.writer.id();
        if self.known_decision(&id) != Some(Decision::Commit) {
            c.writer.validate(self.config()).map_err(|_| RejectReason::MalformedTxn)?;
            self.auth.check_commit_cert(&c.writer, &c.cert).map_err(|_| RejectReason::BadCertificate)?;
            self.remember_decided(id, Decision::Commit);
        }
        Ok((c.writer.ts, value))
    }
}
