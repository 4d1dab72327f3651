//! The [`UidGenerator`] trait every time-based generator implements.

use crate::error::UidError;
use crate::layout::{BitsAllocator, UidParts};

/// A source of unique, time-ordered 64-bit IDs, shareable across threads.
///
/// Implemented for both generators and, so a generator can be passed around however a
/// service holds it, for `&T`, `Box<T>` and `Arc<T>` of any `T: UidGenerator`
/// (`dyn UidGenerator` included).
///
/// In async code, call `try_next_uid` (never blocks) or the generators' own
/// `next_uid_async` (feature `tokio`): `next_uid` may block the calling thread while it
/// waits for the next tick or for the ring to be refilled.
pub trait UidGenerator: Send + Sync {
    /// The next ID: unique for this worker, greater than every ID this thread got before.
    /// May block the thread while the generator waits (see each generator).
    fn next_uid(&self) -> Result<u64, UidError>;

    /// The next ID if one is ready now; never blocks. When none is,
    /// [`UidError::WouldBlock`] says what the call would have waited for.
    fn try_next_uid(&self) -> Result<u64, UidError>;

    /// Fills `out` from the front with new IDs, in increasing order; returns how many
    /// (at least 1 unless `out` is empty). The cached generator claims them with one
    /// atomic step and may return fewer than `out.len()`; others fill it all.
    fn next_uids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        for slot in out.iter_mut() {
            *slot = self.next_uid()?;
        }
        Ok(out.len())
    }

    /// [`next_uid`](Self::next_uid) as an `i64`, for SQL `BIGINT` columns and other
    /// signed APIs: IDs never set the sign bit, so it is the same number.
    fn next_uid_i64(&self) -> Result<i64, UidError> {
        // Every layout keeps bit 63 zero (`TOTAL_BITS` is 63), so this never wraps.
        self.next_uid().map(|uid| uid as i64)
    }

    /// The layout this generator packs IDs with.
    fn allocator(&self) -> &BitsAllocator;

    /// The worker ID inside every ID this generator makes.
    fn worker_id(&self) -> u64;

    /// Takes an ID apart with this generator's layout.
    fn parse_uid(&self, uid: u64) -> Result<UidParts, UidError> {
        self.allocator().parse(uid)
    }
}

macro_rules! forward_uid_generator {
    ($($wrapper:ty),*) => {$(
        impl<T: UidGenerator + ?Sized> UidGenerator for $wrapper {
            #[inline]
            fn next_uid(&self) -> Result<u64, UidError> {
                (**self).next_uid()
            }
            #[inline]
            fn try_next_uid(&self) -> Result<u64, UidError> {
                (**self).try_next_uid()
            }
            #[inline]
            fn next_uids(&self, out: &mut [u64]) -> Result<usize, UidError> {
                (**self).next_uids(out)
            }
            fn allocator(&self) -> &BitsAllocator {
                (**self).allocator()
            }
            fn worker_id(&self) -> u64 {
                (**self).worker_id()
            }
        }
    )*};
}

forward_uid_generator!(&T, Box<T>, std::sync::Arc<T>);

/// What every generator of this crate has in common, time-based or segment: the shape an
/// ID service (or a benchmark) can serve any of them through.
///
/// Implemented for every [`UidGenerator`] and for
/// [`SegmentGenerator`](crate::SegmentGenerator).
///
/// ```
/// use uidgen::{CachedUidGenerator, IdSource};
///
/// fn two(source: &dyn IdSource) -> Result<[u64; 2], uidgen::UidError> {
///     Ok([source.next_id()?, source.next_id()?])
/// }
/// let generator = CachedUidGenerator::builder().worker_id(1).build()?;
/// let [a, b] = two(&generator)?;
/// assert!(b > a);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait IdSource: Send + Sync {
    /// The next ID; may block the thread while the generator waits.
    fn next_id(&self) -> Result<u64, UidError>;
    /// The next ID if one is ready now; never blocks ([`UidError::WouldBlock`] otherwise).
    fn try_next_id(&self) -> Result<u64, UidError>;
    /// Fills `out` from the front with new, increasing IDs; returns how many (at least 1
    /// unless `out` is empty).
    fn next_ids(&self, out: &mut [u64]) -> Result<usize, UidError>;
}

impl<T: UidGenerator + ?Sized> IdSource for T {
    #[inline]
    fn next_id(&self) -> Result<u64, UidError> {
        self.next_uid()
    }
    #[inline]
    fn try_next_id(&self) -> Result<u64, UidError> {
        self.try_next_uid()
    }
    #[inline]
    fn next_ids(&self, out: &mut [u64]) -> Result<usize, UidError> {
        self.next_uids(out)
    }
}
