//! The [`UidGenerator`] trait both generators implement.

use crate::bits::BitsAllocator;
use crate::error::UidError;
use crate::parts::UidParts;

/// A source of unique, time-ordered 64-bit IDs, shareable across threads.
pub trait UidGenerator: Send + Sync {
    /// The next ID: unique for this worker, greater than every ID this thread got before.
    fn next_uid(&self) -> Result<u64, UidError>;

    /// The layout this generator packs IDs with.
    fn allocator(&self) -> &BitsAllocator;

    /// The worker ID inside every ID this generator makes.
    fn worker_id(&self) -> u64;

    /// Takes an ID apart with this generator's layout.
    fn parse_uid(&self, uid: u64) -> Result<UidParts, UidError> {
        self.allocator().parse(uid)
    }
}
