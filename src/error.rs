//! Errors: [`ConfigError`] when something is built with bad settings, [`UidError`] when
//! an ID cannot be handed out or read.

use std::time::Duration;

/// A setting that cannot work. Returned when a layout, generator or assigner is built,
/// never later as a wrong ID. Each message names the field, the value and the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A bit field of the layout is zero.
    #[error("{field} must be at least 1 bit, got 0")]
    ZeroBits {
        /// `time_bits`, `worker_bits` or `seq_bits`.
        field: &'static str,
    },
    /// The three fields do not add up to 63 (64 less the sign bit).
    #[error(
        "time_bits ({time_bits}) + worker_bits ({worker_bits}) + seq_bits ({seq_bits}) = {sum}, \
         but must be exactly 63 (64 bits less the sign bit)"
    )]
    BitsSum {
        /// Bits given to the time delta.
        time_bits: u32,
        /// Bits given to the worker ID.
        worker_bits: u32,
        /// Bits given to the sequence.
        seq_bits: u32,
        /// Their sum.
        sum: u32,
    },
    /// The epoch could not be read.
    #[error("epoch {value:?} is not a valid UTC date: {reason} (expected YYYY-MM-DD or RFC 3339)")]
    InvalidEpoch {
        /// What was given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// The epoch lies after the current time, so deltas would be negative.
    #[error("epoch {epoch} is in the future (now is {now}); it must be at or before now")]
    EpochInFuture {
        /// The epoch, formatted in UTC.
        epoch: String,
        /// The current time, formatted in UTC.
        now: String,
    },
    /// The layout's time bits are used up already.
    #[error(
        "layout {layout} ran out on {ran_out} (time_bits {time_bits} hold {max_delta} {unit} \
         after epoch {epoch}); choose more time_bits or a later epoch"
    )]
    LayoutExhausted {
        /// The layout, as `time/worker/seq unit`.
        layout: String,
        /// Its last representable instant, in UTC.
        ran_out: String,
        /// Time bits of the layout.
        time_bits: u32,
        /// Largest delta they hold.
        max_delta: u64,
        /// "seconds" or "milliseconds".
        unit: &'static str,
        /// The epoch, in UTC.
        epoch: String,
    },
    /// A worker ID does not fit the layout's worker bits.
    #[error(
        "worker_id {worker_id} exceeds max_worker_id {max_worker_id} ({worker_bits} worker bits)"
    )]
    WorkerIdTooLarge {
        /// The worker ID given or assigned.
        worker_id: u64,
        /// The largest the layout holds.
        max_worker_id: u64,
        /// Worker bits of the layout.
        worker_bits: u32,
    },
    /// A named setting is out of its range.
    #[error("{field} = {value} is out of range: {limit}")]
    OutOfRange {
        /// The setting.
        field: &'static str,
        /// What was given.
        value: String,
        /// The allowed range, in words.
        limit: String,
    },
    /// The padding thread could not be started.
    #[error("could not start the padding thread: {0}")]
    Spawn(String),
}

/// Why an ID could not be handed out, or a UID could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UidError {
    /// The clock went backwards, and the generator will not risk repeating an ID.
    #[error("clock moved backwards by {by:?}; refusing to generate IDs until it catches up")]
    ClockMovedBackwards {
        /// How far back it went.
        by: Duration,
    },
    /// The clock reads a time before the layout's epoch.
    #[error("clock reads {now}, before the layout's epoch {epoch}")]
    ClockBeforeEpoch {
        /// The clock's reading, in UTC.
        now: String,
        /// The epoch, in UTC.
        epoch: String,
    },
    /// The layout's time bits are used up: no further ID is representable.
    #[error("the layout's time is exhausted: its last instant was {last_instant}")]
    TimeExhausted {
        /// The last instant the layout can represent, in UTC.
        last_instant: String,
    },
    /// The ring buffer stayed empty for longer than the take policy allows.
    #[error("ring buffer empty: the padding thread did not refill it within {waited:?}")]
    BufferExhausted {
        /// How long the take waited.
        waited: Duration,
    },
    /// A UID that no generator of this layout could have made.
    #[error("invalid UID {input:?}: {reason}")]
    InvalidUid {
        /// The UID as given.
        input: String,
        /// What is wrong with it, with the limit.
        reason: String,
    },
}
