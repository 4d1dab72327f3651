//! What a segment generator needs of a store: one counter per tag (Meituan Leaf's
//! `leaf_alloc` row), moved forward a range at a time in one atomic step.

use super::{StoreError, StoreKind};
use std::fmt;
use std::sync::Arc;

/// Counters that [`SegmentGenerator`](crate::SegmentGenerator)s take ranges of IDs from.
///
/// A tag's counter (`max_id`, as in Leaf's `leaf_alloc`) is the first ID no one has been
/// given yet. [`allocate`](Self::allocate) moves it up by `step` in one atomic step on
/// the store and returns the new value: the caller owns `[max_id - step, max_id)`, and no
/// other caller, in any process, ever gets a number in it. Implementations must never
/// read the new value on another connection or outside the step that wrote it.
pub trait SegmentStore: Send + Sync + fmt::Debug + 'static {
    /// Where the counters are, for messages (never with a password).
    fn describe(&self) -> String;

    /// Which engine the store is (tag rules and errors name it); stores from outside
    /// this crate are [`StoreKind::Other`].
    fn kind(&self) -> StoreKind {
        StoreKind::Other
    }

    /// Moves `tag`'s counter up by `step` (≥ 1) and returns its new value, so the caller
    /// owns `[new - step, new)`. A tag that does not exist is
    /// [`StoreError::MissingTag`].
    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError>;

    /// Creates `tag` with its counter at `first_id` and `step` as its base step, unless it
    /// exists; `Ok(true)` if this call created it. An existing tag is left as it is.
    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError>;

    /// Sets `tag`'s counter back from `from` to `to` (`to < from`), only if it is still
    /// `from`, that is, no one allocated after the caller; `Ok(true)` if it was set.
    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError>;

    /// Raises `tag`'s counter from `from` to `to` (`to > from`), only if it is still
    /// `from`; `Ok(true)` if it was set. Used to move a store that went back (restored,
    /// rolled back) past the IDs it handed out already; never lowers a counter.
    fn raise(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        let _ = (from, to);
        Err(StoreError::Unexpected {
            store: self.kind().name(),
            location: self.describe(),
            step: "raising a counter",
            what: format!(
                "this store cannot raise tag {tag:?}'s counter (implement SegmentStore::raise)"
            ),
        })
    }

    /// One tag's row, `None` if it does not exist.
    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError>;

    /// The store's identity as this process adopted it (a random number, then when it
    /// was made), for status pages: `None` before the first call, and for a store outside
    /// uidgen's data-loss checks (one implemented elsewhere).
    fn identity(&self) -> Option<String> {
        None
    }

    /// Every tag, ordered by name.
    fn tags(&self) -> Result<Vec<TagRecord>, StoreError>;
}

/// One tag's counter, as [`SegmentStore::tags`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TagRecord {
    /// The tag (Leaf's `biz_tag`).
    pub tag: String,
    /// The first ID not yet handed to anyone.
    pub max_id: u64,
    /// The base step: the smallest range a generator takes.
    pub step: u64,
    /// Free text.
    pub description: String,
    /// When the row last changed, in Unix milliseconds (0 if the store does not say).
    pub updated_ms: u64,
}

impl TagRecord {
    /// A record, for stores implemented outside this crate.
    pub fn new(tag: String, max_id: u64, step: u64, description: String, updated_ms: u64) -> Self {
        Self {
            tag,
            max_id,
            step,
            description,
            updated_ms,
        }
    }
}

macro_rules! forward_segment_store {
    ($($wrapper:ident),*) => {$(
impl<S: SegmentStore + ?Sized> SegmentStore for $wrapper<S> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn kind(&self) -> StoreKind {
        (**self).kind()
    }
    fn allocate(&self, tag: &str, step: u64) -> Result<u64, StoreError> {
        (**self).allocate(tag, step)
    }
    fn create(
        &self,
        tag: &str,
        first_id: u64,
        step: u64,
        description: &str,
    ) -> Result<bool, StoreError> {
        (**self).create(tag, first_id, step, description)
    }
    fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        (**self).give_back(tag, from, to)
    }
    fn raise(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
        (**self).raise(tag, from, to)
    }
    fn tag(&self, tag: &str) -> Result<Option<TagRecord>, StoreError> {
        (**self).tag(tag)
    }
    fn identity(&self) -> Option<String> {
        (**self).identity()
    }
    fn tags(&self) -> Result<Vec<TagRecord>, StoreError> {
        (**self).tags()
    }
}
    )*};
}

// A boxed or shared store is a store too (one store for many tags: `Arc`).
forward_segment_store!(Box, Arc);

/// `impl SegmentStore` for a public store type whose field `$steps` holds its engine's
/// steps (themselves a [`SegmentStore`]).
#[cfg(any(feature = "sqlite", feature = "mysql", feature = "postgres"))]
macro_rules! segment_store_over_steps {
    ($store:ty, $steps:ident) => {
        impl $crate::store::segment::SegmentStore for $store {
            fn describe(&self) -> String {
                self.$steps.describe()
            }
            fn kind(&self) -> $crate::store::StoreKind {
                self.$steps.kind()
            }
            fn allocate(&self, tag: &str, step: u64) -> Result<u64, $crate::store::StoreError> {
                self.$steps.allocate(tag, step)
            }
            fn create(
                &self,
                tag: &str,
                first_id: u64,
                step: u64,
                description: &str,
            ) -> Result<bool, $crate::store::StoreError> {
                self.$steps.create(tag, first_id, step, description)
            }
            fn give_back(
                &self,
                tag: &str,
                from: u64,
                to: u64,
            ) -> Result<bool, $crate::store::StoreError> {
                self.$steps.give_back(tag, from, to)
            }
            fn raise(
                &self,
                tag: &str,
                from: u64,
                to: u64,
            ) -> Result<bool, $crate::store::StoreError> {
                self.$steps.raise(tag, from, to)
            }
            fn tag(
                &self,
                tag: &str,
            ) -> Result<Option<$crate::store::segment::TagRecord>, $crate::store::StoreError> {
                self.$steps.tag(tag)
            }
            fn tags(
                &self,
            ) -> Result<Vec<$crate::store::segment::TagRecord>, $crate::store::StoreError> {
                self.$steps.tags()
            }
        }
    };
}
#[cfg(any(feature = "sqlite", feature = "mysql", feature = "postgres"))]
pub(crate) use segment_store_over_steps;

/// `give_back` and `raise` of an engine's segment store whose `set_counter(step, tag,
/// from, to)` moves a counter only if it still holds `from`: the rules of both written
/// once. A give-back only ever lowers a counter (to a range's start), a raise only
/// lifts it, and never past the largest `BIGINT`; anything else changes nothing.
#[allow(unused_macros)] // unused in a build without a store engine
macro_rules! give_back_and_raise {
    ($store:expr) => {
        fn give_back(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
            $crate::store::segment::check_tag($store(self), tag)?;
            if to >= from {
                return Ok(false);
            }
            self.set_counter("giving a range back", tag, from, to)
        }

        fn raise(&self, tag: &str, from: u64, to: u64) -> Result<bool, StoreError> {
            $crate::store::segment::check_tag($store(self), tag)?;
            if to <= from || to > i64::MAX as u64 {
                return Ok(false);
            }
            self.set_counter("raising a counter", tag, from, to)
        }
    };
}
#[allow(unused_imports)]
pub(crate) use give_back_and_raise;

/// The longest tag: Leaf's `biz_tag` is `varchar(128)`.
pub const MAX_TAG_LEN: usize = 128;

/// The longest description: Leaf's column is `varchar(256)`.
pub const MAX_DESCRIPTION_LEN: usize = 256;

/// The largest step one allocation may take, and the largest base step a tag may have
/// (Leaf's `step` column is a 32-bit `int`).
pub const MAX_BASE_STEP: u64 = i32::MAX as u64;

/// Whether `tag` can name a segment tag: the rule every store and generator checks
/// ([`MAX_TAG_LEN`] characters at most, none a control character, no white space at
/// either end). Call it to refuse a tag before any store call; the error is
/// [`StoreError::InvalidName`], whose `rule` says what a tag must look like.
///
/// ```
/// assert!(uidgen::check_segment_tag("order").is_ok());
/// assert!(uidgen::check_segment_tag(" order").is_err());
/// ```
pub fn check_segment_tag(tag: &str) -> Result<(), StoreError> {
    check_tag("segment store", tag)
}

/// Checks a tag before it reaches a store: 1 to 128 characters, none of them a control
/// character (so messages and keys print as they are), no white space at either end (a
/// SQL `PAD SPACE` collation would take `tag` and `tag ` for one tag; refused everywhere,
/// tags compare byte for byte on every store).
// Under loom only the chain is built, not the generator that uses these.
#[cfg_attr(uidgen_loom, allow(dead_code))]
pub(crate) fn check_tag(store: &'static str, tag: &str) -> Result<(), StoreError> {
    if tag.is_empty()
        || tag.chars().count() > MAX_TAG_LEN
        || tag.chars().any(char::is_control)
        || tag.trim() != tag
    {
        return Err(StoreError::InvalidName {
            store,
            what: "tag",
            name: tag.chars().take(MAX_TAG_LEN).collect(),
            rule: "use 1 to 128 characters, without control characters or white space at \
                   either end",
        });
    }
    Ok(())
}

/// Checks the arguments of [`SegmentStore::create`].
#[cfg(any(
    feature = "sqlite",
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper"
))]
pub(crate) fn check_create(
    store: &'static str,
    tag: &str,
    first_id: u64,
    step: u64,
    description: &str,
) -> Result<(), StoreError> {
    check_tag(store, tag)?;
    let problem = if description.chars().count() > MAX_DESCRIPTION_LEN {
        format!(
            "the description has {} characters; at most {MAX_DESCRIPTION_LEN}",
            description.chars().count()
        )
    } else if step == 0 || step > MAX_BASE_STEP {
        format!("step {step} is out of range: 1..={MAX_BASE_STEP}")
    } else if first_id == 0 || first_id > i64::MAX as u64 - step {
        format!(
            "first ID {first_id} is out of range: 1..={} for step {step}",
            i64::MAX as u64 - step
        )
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidSegment {
        store,
        tag: tag.to_owned(),
        problem,
    })
}

/// The error for a tag that does not exist, with the ways to create it.
#[cfg_attr(uidgen_loom, allow(dead_code))]
pub(crate) fn missing_tag(store: &'static str, location: &str, tag: &str) -> StoreError {
    StoreError::MissingTag {
        store,
        location: location.to_owned(),
        tag: tag.to_owned(),
    }
}

/// Why an allocation changed no row: the tag is missing (`record` is `None`), or its
/// counter cannot grow by `step` within the largest `BIGINT`.
#[cfg(any(feature = "sqlite", feature = "mysql", feature = "postgres"))]
pub(crate) fn no_range(
    store: &'static str,
    describe: &str,
    tag: &str,
    step: u64,
    record: Option<TagRecord>,
) -> StoreError {
    match record {
        None => missing_tag(store, describe, tag),
        Some(record) => counter_overflow(store, tag, &record.max_id.to_string(), step),
    }
}

/// The error for a counter that cannot grow by `step` within the largest `BIGINT`.
pub(crate) fn counter_overflow(
    store: &'static str,
    tag: &str,
    max_id: &str,
    step: u64,
) -> StoreError {
    StoreError::InvalidSegment {
        store,
        tag: tag.to_owned(),
        problem: format!(
            "the counter {max_id} cannot grow by {step} within the largest BIGINT {}",
            i64::MAX
        ),
    }
}

/// Checks a step for [`SegmentStore::allocate`].
#[cfg(any(
    feature = "sqlite",
    feature = "mysql",
    feature = "postgres",
    feature = "redis",
    feature = "etcd",
    feature = "zookeeper"
))]
pub(crate) fn check_step(store: &'static str, tag: &str, step: u64) -> Result<(), StoreError> {
    if step == 0 || step > MAX_BASE_STEP * 16 {
        return Err(StoreError::InvalidSegment {
            store,
            tag: tag.to_owned(),
            problem: format!("step {step} is out of range: 1..={}", MAX_BASE_STEP * 16),
        });
    }
    Ok(())
}

/// A tag's value as the key-value stores keep it: `max_id step updated_ms description`.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) fn tag_text(record: &TagRecord) -> String {
    format!(
        "{} {} {} {}",
        record.max_id, record.step, record.updated_ms, record.description
    )
}

/// The record of a [`tag_text`] value (`None`: not one).
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) fn tag_from_text(tag: String, value: &[u8]) -> Option<TagRecord> {
    let text = std::str::from_utf8(value).ok()?;
    let mut fields = text.splitn(4, ' ');
    let max_id = fields.next()?.parse().ok()?;
    let step = fields.next()?.parse().ok()?;
    let updated_ms = fields.next()?.parse().ok()?;
    let description = fields.next().unwrap_or_default().to_owned();
    Some(TagRecord {
        tag,
        max_id,
        step,
        description,
        updated_ms,
    })
}

#[cfg(all(test, any(feature = "etcd", feature = "zookeeper")))]
mod text_tests {
    use super::*;

    #[test]
    fn a_tag_value_reads_back_with_spaces_in_its_description() {
        let record = TagRecord {
            tag: "t".into(),
            max_id: 42,
            step: 1000,
            description: "orders of shop 3".into(),
            updated_ms: 7,
        };
        let back = tag_from_text("t".into(), tag_text(&record).as_bytes()).unwrap();
        assert_eq!(
            (
                back.max_id,
                back.step,
                back.updated_ms,
                back.description.as_str()
            ),
            (42, 1000, 7, "orders of shop 3")
        );
        assert!(tag_from_text("t".into(), b"x 1 2 d").is_none());
        assert_eq!(tag_from_text("t".into(), b"1 2 3").unwrap().description, "");
    }
}
