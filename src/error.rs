//! Errors: [`ConfigError`] when something is built with bad settings, [`UidError`] when
//! an ID cannot be handed out or read. Both carry values; only `Display` formats them.

use crate::clock::format_instant;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A setting that cannot work. Returned when a layout, generator or assigner is built,
/// never later as a wrong ID. Each message names the field, the value and the limit.
#[derive(Debug, Clone, thiserror::Error)]
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
    /// The three fields do not add up to the total a capped layout asked for
    /// ([`LayoutBuilder::total_bits`](crate::LayoutBuilder::total_bits)).
    #[error(
        "time_bits ({time_bits}) + worker_bits ({worker_bits}) + seq_bits ({seq_bits}) = {sum}, \
         but must be exactly the layout's total_bits ({total})"
    )]
    BitsTotal {
        /// Bits given to the time delta.
        time_bits: u32,
        /// Bits given to the worker ID.
        worker_bits: u32,
        /// Bits given to the sequence.
        seq_bits: u32,
        /// Their sum.
        sum: u32,
        /// The total asked for.
        total: u32,
    },
    /// The epoch could not be read as a date.
    #[error(
        "epoch {} is not a valid UTC date (expected YYYY-MM-DD or RFC 3339)",
        Shown(value)
    )]
    InvalidEpoch {
        /// What was given.
        value: String,
        /// Why the date parser refused it.
        #[source]
        source: chrono::ParseError,
    },
    /// The epoch lies before 1970-01-01, which Unix milliseconds cannot hold.
    #[error(
        "epoch {} is before 1970-01-01; epochs must be at or after it",
        Shown(value)
    )]
    EpochBefore1970 {
        /// What was given.
        value: String,
    },
    /// The epoch lies after the current time, so deltas would be negative.
    #[error(
        "epoch {} is in the future (now is {}); it must be at or before now",
        format_instant(*epoch_millis),
        format_instant(*now_millis)
    )]
    EpochInFuture {
        /// The epoch, in Unix milliseconds.
        epoch_millis: u64,
        /// The clock's reading, in Unix milliseconds.
        now_millis: u64,
    },
    /// The layout's time bits are used up already.
    #[error(
        "layout {time_bits}/{worker_bits}/{seq_bits} {unit} epoch {} ran out on {} \
         (time_bits {time_bits} hold {max_delta} ticks); choose more time_bits or a later epoch",
        format_instant(*epoch_millis),
        format_instant(*end_millis)
    )]
    LayoutExhausted {
        /// Time bits of the layout.
        time_bits: u32,
        /// Worker bits of the layout.
        worker_bits: u32,
        /// Sequence bits of the layout.
        seq_bits: u32,
        /// The tick: "s" or "ms".
        unit: &'static str,
        /// The epoch, in Unix milliseconds.
        epoch_millis: u64,
        /// The first instant the layout cannot represent, in Unix milliseconds.
        end_millis: u64,
        /// Largest delta the time bits hold.
        max_delta: u64,
    },
    /// A worker ID does not fit the layout's worker bits.
    #[error(
        "worker_id {worker_id} exceeds max_worker_id {max_worker_id} ({worker_bits} worker bits); \
         use a worker ID from 0 to {max_worker_id} or a layout with more worker bits"
    )]
    WorkerIdTooLarge {
        /// The worker ID given.
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
    /// Two settings that cannot be used together.
    #[error("{first} and {second} cannot be used together: {why}")]
    Conflict {
        /// One setting.
        first: &'static str,
        /// The other.
        second: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// The padding thread could not be started.
    #[error("could not start the padding thread")]
    Spawn(#[source] Arc<std::io::Error>),
    /// The generator's first ID now would be at or below its ID floor: an old scheme's
    /// IDs reach higher than this layout does now.
    #[error(
        "the first ID this generator would make now, {first}, is not above its ID floor \
         {floor}: {why}; run `uidgen migrate plan` for a layout (or segment start) above \
         the floor"
    )]
    BelowFloor {
        /// The floor: no ID at or below it is handed out.
        floor: u64,
        /// The smallest ID the generator would make now.
        first: u64,
        /// What makes it so, in words.
        why: String,
    },
    /// A layout that only reads IDs (its sequence sits above the worker ID, as
    /// Sonyflake's) was given to a generator.
    #[error(
        "layout {layout} puts the sequence above the worker ID (Sonyflake's order): uidgen \
         reads such IDs but makes IDs with the worker ID above the sequence; run `uidgen \
         migrate plan --from sonyflake` for a layout that keeps new IDs above the old ones"
    )]
    ReadOnlyLayout {
        /// The layout, as it prints.
        layout: String,
    },
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
    /// A previous holder of the worker ID used ticks up to its time mark, and the clock
    /// has not reached them yet. Not a clock rollback: a cached generator borrows future
    /// ticks, so its mark can be ahead of the clock when it lets the worker ID go (a clock
    /// set back since then looks the same from here). The default generator waits for the
    /// clock to pass the mark for up to its bound
    /// ([`max_mark_wait`](crate::DefaultUidGeneratorBuilder::max_mark_wait)); this says
    /// the wait would be longer. Retry after `ahead`, or use another worker ID.
    #[error(
        "a previous holder of worker ID {worker_id} used ticks up to {} UTC (the worker \
         ID's time mark), {ahead:?} ahead of the clock ({} UTC); this generator waits at \
         most {max_wait:?} for the clock to pass a time mark: retry in {ahead:?}, or use \
         another worker ID",
        format_instant(*mark_millis),
        format_instant(*now_millis)
    )]
    MarkAhead {
        /// The worker ID.
        worker_id: u64,
        /// The time mark: the last millisecond a previous holder may have used, in Unix
        /// milliseconds.
        mark_millis: u64,
        /// The clock's reading, in Unix milliseconds.
        now_millis: u64,
        /// How long until the clock passes the mark.
        ahead: Duration,
        /// The longest the generator waits for it.
        max_wait: Duration,
    },
    /// The clock reads a time before the layout's epoch.
    #[error(
        "clock reads {}, before the layout's epoch {}",
        format_instant(*now_millis),
        format_instant(*epoch_millis)
    )]
    ClockBeforeEpoch {
        /// The clock's reading, in Unix milliseconds.
        now_millis: u64,
        /// The epoch, in Unix milliseconds.
        epoch_millis: u64,
    },
    /// The layout's time bits are used up: no further ID is representable.
    #[error(
        "the layout's time is exhausted: its last instant was {}",
        format_instant(*last_instant_millis)
    )]
    TimeExhausted {
        /// The last instant the layout can represent, in Unix milliseconds.
        last_instant_millis: u64,
    },
    /// The ring buffer stayed empty for longer than the take policy allows.
    #[error("ring buffer empty: the padding thread did not refill it within {waited:?}")]
    BufferExhausted {
        /// How long the take waited.
        waited: Duration,
    },
    /// The ring stayed empty because padding waits for the clock, and why: a clock
    /// stepped back further than the rollback allowance, or the worker ID's time mark
    /// ahead of the clock (with the time it waits for).
    #[error("{why}")]
    WaitingForClock {
        /// What happened and until when, in words.
        why: String,
    },
    /// The padding thread has stopped, so the ring will never be refilled.
    #[error("the padding thread has stopped ({why}); build a new generator")]
    PadderStopped {
        /// What stopped it.
        why: &'static str,
    },
    /// The worker ID's lease or time mark no longer lets the generator start a tick: the
    /// lease was lost or expired, or its store could not record a higher mark in time.
    /// IDs already built stay unique. A store that answers again while the lease lasts
    /// lets the generator go on; a lost lease needs a new generator (with a new lease).
    #[error("the worker ID may not be used for new ticks: {why}")]
    WorkerLease {
        /// What happened, naming the store (never with a password).
        why: String,
    },
    /// A segment generator's fetched ranges are used up and the take policy gave up, or
    /// the store gave a range it must refuse.
    #[error(
        "segment tag {}: no IDs left after waiting {waited:?}: {why}",
        Shown(tag)
    )]
    SegmentExhausted {
        /// The tag.
        tag: String,
        /// How long the take waited.
        waited: Duration,
        /// Why no range came: the store's error (naming the store), or a refused range.
        why: String,
    },
    /// `try_next_uid`: no ID is ready without waiting.
    #[error("no ID is ready without waiting ({why})")]
    WouldBlock {
        /// What the call would have waited for.
        why: &'static str,
        /// How long the wait would be, when the generator knows.
        wait: Option<Duration>,
    },
    /// A UID that no generator of this layout could have made.
    #[error("invalid UID {}: {reason}", Shown(input))]
    InvalidUid {
        /// The UID as given.
        input: String,
        /// What is wrong with it.
        reason: InvalidUidReason,
    },
    /// The next ID would be at or below the generator's ID floor (the clock stepped
    /// back, or a store handed out a range below it): refused rather than handed out.
    #[error(
        "the next ID, {next}, would not be above the ID floor {floor}; no ID at or below \
         it is handed out{why}"
    )]
    BelowFloor {
        /// The floor.
        floor: u64,
        /// The ID refused.
        next: u64,
        /// What to do, in words (may be empty).
        why: &'static str,
    },
    /// A field too large for the layout was given to `allocate`.
    #[error("{field} {value} exceeds its maximum {max}")]
    FieldTooLarge {
        /// `delta`, `worker_id` or `sequence`.
        field: &'static str,
        /// What was given.
        value: u64,
        /// The layout's maximum.
        max: u64,
    },
}

/// What is wrong with a UID that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidUidReason {
    /// Nothing was given.
    Empty,
    /// A minus sign: IDs are never negative.
    Negative,
    /// Not a whole decimal number that fits 64 bits.
    NotDecimal,
    /// Bit 63 is set, which no layout uses.
    SignBitSet,
    /// Above the largest ID of a layout capped below 63 bits.
    AboveLayout {
        /// The layout's total bits.
        total_bits: u32,
    },
}

impl fmt::Display for InvalidUidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let max = i64::MAX;
        match self {
            InvalidUidReason::Empty => write!(f, "empty; expected a decimal integer in 0..={max}"),
            InvalidUidReason::Negative => {
                write!(f, "IDs are never negative; expected 0..={max}")
            }
            InvalidUidReason::NotDecimal => {
                write!(f, "not a decimal integer in 0..={max}")
            }
            InvalidUidReason::SignBitSet => {
                write!(f, "the sign bit is set; IDs are at most {max}")
            }
            InvalidUidReason::AboveLayout { total_bits } => write!(
                f,
                "above this layout's largest ID, {} (it uses {total_bits} bits)",
                (1u64 << total_bits) - 1
            ),
        }
    }
}

/// Shows user input in a message: quoted, and cut short when long, so a huge argument is
/// not echoed back whole.
pub(crate) struct Shown<'a>(pub(crate) &'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX_CHARS: usize = 64;
        let chars = self.0.chars().count();
        if chars <= MAX_CHARS {
            write!(f, "{:?}", self.0)
        } else {
            let head: String = self.0.chars().take(MAX_CHARS).collect();
            write!(f, "{head:?}… ({chars} characters)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_input_is_cut_in_messages() {
        let err = UidError::InvalidUid {
            input: "9".repeat(100_000),
            reason: InvalidUidReason::NotDecimal,
        };
        let message = err.to_string();
        assert!(message.len() < 300, "{}", message.len());
        assert!(message.contains("100000 characters"), "{message}");
        assert!(Shown("short").to_string() == "\"short\"");
    }
}
