//! The in-process schemes: a maintained crate's generator where one is kept (UUID v4
//! and v7, ULID, MongoDB's ObjectId), and written here from their documented layouts
//! the schemes the articles print in full (Twitter's snowflake, ZooKeeper's session ID,
//! Xiaomi push's message ID, Boundary's flake).

use super::{Client, Entry, Error, Needs, Place, Scheme};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

pub(super) fn entries() -> Vec<Entry> {
    let entry = |name, title, bytes_per_id, open| Entry {
        name,
        title,
        needs: Needs::Nothing,
        stores: 0,
        bytes_per_id,
        ids_per_call: 1,
        open: Some(open),
    };
    vec![
        entry(
            "uuid-v4",
            "UUID v4 (uuid crate): 122 random bits",
            16,
            |_: &Place<'_>| Ok(stateless(|| uuid::Uuid::new_v4().as_u128())),
        ),
        entry(
            "uuid-v7",
            "UUID v7 (uuid crate): millisecond time, then a counter and random bits",
            16,
            |_| Ok(stateless(|| uuid::Uuid::now_v7().as_u128())),
        ),
        entry(
            "ulid",
            "ULID (ulid crate): millisecond time, then 80 random bits",
            16,
            |_| Ok(stateless(|| ulid::Ulid::generate().0)),
        ),
        entry(
            "objectid",
            "MongoDB ObjectId (bson crate): seconds, a random per-process value, a counter",
            12,
            |_| {
                Ok(stateless(|| {
                    let bytes = bson::oid::ObjectId::new().bytes();
                    bytes.iter().fold(0u128, |key, &b| key << 8 | u128::from(b))
                }))
            },
        ),
        entry(
            "twitter-snowflake",
            "Twitter's snowflake: 41 bits of ms since 2010-11-04, 10 of worker, 12 of sequence",
            8,
            |_| Ok(Box::new(Shared(Arc::new(Snowflake::default())))),
        ),
        entry(
            "zookeeper-session-id",
            "ZooKeeper's session ID: server ID in the high byte, ms time, a 16-bit counter",
            8,
            |_| Ok(Box::new(Shared(Arc::new(ZkSession::starting_now(1))))),
        ),
        entry(
            "xiaomi-msgid",
            "Xiaomi push's message ID: a text of prefix, ms time, server and counter",
            XiaomiMsgId::LEN,
            |_| Ok(Box::new(Shared(Arc::new(XiaomiMsgId::default())))),
        ),
        entry(
            "boundary-flake",
            "Boundary's flake: 128 bits of 64-bit ms time, 48-bit worker (MAC), 16-bit sequence",
            16,
            |_| Ok(Box::new(Shared(Arc::new(BoundaryFlake::default())))),
        ),
    ]
}

/// A scheme whose every call is one function with no state of ours.
struct Stateless(fn() -> u128);

fn stateless(make: fn() -> u128) -> Box<dyn Scheme> {
    Box::new(Stateless(make))
}

impl Scheme for Stateless {
    fn client(&self) -> Result<Box<dyn Client>, Error> {
        Ok(Box::new(Stateless(self.0)))
    }
}

impl Client for Stateless {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error> {
        out.push((self.0)());
        Ok(())
    }
}

/// A generator of ours that every thread shares.
pub(super) trait Make: Send + Sync + 'static {
    fn make(&self) -> Result<u128, Error>;
}

pub(super) struct Shared<T>(pub(super) Arc<T>);

impl<T: Make> Scheme for Shared<T> {
    fn client(&self) -> Result<Box<dyn Client>, Error> {
        Ok(Box::new(Shared(Arc::clone(&self.0))))
    }
}

impl<T: Make> Client for Shared<T> {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error> {
        out.push(self.0.make()?);
        Ok(())
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The millisecond after `last`, waited for (the schemes below do this when a
/// millisecond's sequence is used up).
fn next_ms_after(last: u64) -> u64 {
    loop {
        let now = now_ms();
        if now > last {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// The last millisecond and the sequence within it, behind a lock: Twitter's, Xiaomi's
/// and Boundary's generators each keep this (Twitter's is a synchronized method).
#[derive(Default)]
struct MsSequence(Mutex<(u64, u64)>);

impl MsSequence {
    /// The millisecond and sequence of the next ID, sequences below `limit`; a clock that
    /// went back is refused, as Twitter's generator does.
    fn next(&self, limit: u64) -> Result<(u64, u64), Error> {
        let mut state = self.0.lock().map_err(|_| "a thread panicked".to_owned())?;
        let (last, seq) = *state;
        let now = now_ms();
        if now < last {
            return Err(format!(
                "the clock went back {} ms: refusing, as Twitter's generator does",
                last - now
            ));
        }
        *state = if now > last {
            (now, 0)
        } else if seq + 1 < limit {
            (last, seq + 1)
        } else {
            (next_ms_after(last), 0)
        };
        Ok(*state)
    }
}

/// Twitter's snowflake (its 2010 Scala server): ms since its epoch in 41 bits, worker
/// (datacenter and machine) in 10, sequence in 12.
#[derive(Default)]
struct Snowflake(MsSequence);

impl Snowflake {
    const EPOCH_MS: u64 = 1_288_834_974_657;
    const WORKER: u64 = 1;
}

impl Make for Snowflake {
    fn make(&self) -> Result<u128, Error> {
        let (ms, seq) = self.0.next(1 << 12)?;
        let id = (ms - Self::EPOCH_MS) << 22 | Self::WORKER << 12 | seq;
        Ok(u128::from(id))
    }
}

/// ZooKeeper's session IDs (`SessionTrackerImpl.initializeNextSession`): the server ID in
/// the top byte, the start time in ms in the next 40 bits, a counter from 0 in the low
/// 16 bits carried up into the time: one atomic add per ID, no clock read after start.
struct ZkSession(AtomicU64);

impl ZkSession {
    fn starting_now(server_id: u64) -> Self {
        Self(AtomicU64::new((now_ms() << 24) >> 8 | server_id << 56))
    }
}

impl Make for ZkSession {
    fn make(&self) -> Result<u128, Error> {
        Ok(u128::from(self.0.fetch_add(1, Ordering::Relaxed)))
    }
}

/// Xiaomi push's message IDs as the articles print their parts: a text of a fixed
/// prefix, the ms time, the server and a per-ms counter, each at a fixed width so that
/// the texts sort as they were made. The key is the text read back (a check of its own).
#[derive(Default)]
struct XiaomiMsgId(MsSequence);

impl XiaomiMsgId {
    const PREFIX: &'static str = "sdm";
    const SERVER: u64 = 1;
    /// 3 prefix, 13 ms, 2 server, 4 counter.
    const LEN: usize = 22;
}

impl Make for XiaomiMsgId {
    fn make(&self) -> Result<u128, Error> {
        let (ms, seq) = self.0.next(10_000)?;
        let text = format!("{}{ms:013}{:02}{seq:04}", Self::PREFIX, Self::SERVER);
        let digits = text
            .strip_prefix(Self::PREFIX)
            .filter(|d| d.len() == Self::LEN - Self::PREFIX.len())
            .ok_or_else(|| format!("a message ID of the wrong shape: {text}"))?;
        digits
            .parse::<u128>()
            .map_err(|e| format!("a message ID that does not read back ({text}): {e}"))
    }
}

/// Boundary's flake: 128 bits of a 64-bit ms time, a 48-bit worker ID (the machine's MAC
/// address) and a 16-bit sequence.
#[derive(Default)]
struct BoundaryFlake(MsSequence);

impl BoundaryFlake {
    const WORKER: u128 = 0x0242_ac11_0002;
}

impl Make for BoundaryFlake {
    fn make(&self) -> Result<u128, Error> {
        let (ms, seq) = self.0.next(1 << 16)?;
        Ok(u128::from(ms) << 64 | Self::WORKER << 16 | u128::from(seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snowflake_parts_are_where_twitter_put_them() {
        let flake = Snowflake::default();
        let before = now_ms();
        let id = flake.make().expect("an ID") as u64;
        let after = now_ms();
        let ms = (id >> 22) + Snowflake::EPOCH_MS;
        assert!(
            (before..=after).contains(&ms),
            "{ms} not in {before}..={after}"
        );
        assert_eq!(id >> 12 & 0x3ff, Snowflake::WORKER);
        let next = flake.make().expect("an ID") as u64;
        assert!(next > id);
    }

    #[test]
    fn a_used_up_millisecond_waits_for_the_next() {
        let seq = MsSequence::default();
        let (first_ms, _) = seq.next(2).expect("first");
        let mut ms_seen = vec![first_ms];
        for _ in 0..5 {
            let (ms, s) = seq.next(2).expect("next");
            assert!(s < 2);
            ms_seen.push(ms);
        }
        // Two IDs a millisecond at most.
        for w in ms_seen.windows(3) {
            assert!(!(w[0] == w[1] && w[1] == w[2]), "{ms_seen:?}");
        }
    }

    #[test]
    fn zookeeper_session_ids_carry_the_server_and_the_time() {
        let before = now_ms();
        let id = ZkSession::starting_now(7).make().expect("an ID") as u64;
        assert_eq!(id >> 56, 7);
        let ms = (id >> 16) & ((1 << 40) - 1);
        assert!(
            ms.abs_diff(before & ((1 << 40) - 1)) < 5_000,
            "{ms} vs {before}"
        );
    }

    #[test]
    fn xiaomi_ids_read_back_in_order() {
        let gen = XiaomiMsgId::default();
        let a = gen.make().expect("an ID");
        let b = gen.make().expect("an ID");
        assert!(b > a);
        assert_eq!(
            a.to_string().len(),
            19,
            "13 ms + 2 server + 4 counter digits"
        );
    }

    #[test]
    fn boundary_flakes_hold_time_worker_and_sequence() {
        let id = BoundaryFlake::default().make().expect("an ID");
        assert_eq!((id >> 16) & 0xffff_ffff_ffff, BoundaryFlake::WORKER);
        assert!(((id >> 64) as u64).abs_diff(now_ms()) < 5_000);
    }
}
