//! A client's open tags, found on every ID without a lock: a fixed table of slots, each
//! set once and never cleared or moved (open addressing on the tag's hash), so a lookup
//! is a hash, an acquire load per probe and a compare. Tags past the table's room go to
//! a map behind a lock.

use crate::range::Tag;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, OnceLock};

/// Slots in the table (a power of two): 16 KiB a client.
const SLOTS: usize = 1_024;
/// Slots a tag may be put in, from its hash on (a lookup stops at the first empty one):
/// enough that the table fills well before tags go to the overflow.
const PROBES: usize = 32;

pub(crate) struct OpenTags {
    slots: Box<[OnceLock<Arc<Tag>>]>,
    hasher: foldhash::fast::RandomState,
    /// Tags whose slots were all taken.
    overflow: Mutex<HashMap<String, Arc<Tag>>>,
}

impl Default for OpenTags {
    fn default() -> Self {
        Self {
            slots: (0..SLOTS).map(|_| OnceLock::new()).collect(),
            hasher: foldhash::fast::RandomState::default(),
            overflow: Mutex::default(),
        }
    }
}

impl OpenTags {
    /// The open tag `name`, if it is.
    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<Tag>> {
        let at = self.hasher.hash_one(name) as usize;
        for probe in 0..PROBES {
            match self.slots[(at + probe) & (SLOTS - 1)].get() {
                // Slots fill in probe order and never empty: it is nowhere after this.
                None => return None,
                Some(tag) if tag.name() == name => return Some(tag),
                Some(_) => {}
            }
        }
        None
    }

    /// The open tag `name` from the table or the overflow (the slow path's lookup).
    pub(crate) fn find(&self, name: &str) -> Option<Arc<Tag>> {
        self.get(name).cloned().or_else(|| {
            let overflow = self.overflow.lock().unwrap_or_else(|p| p.into_inner());
            overflow.get(name).cloned()
        })
    }

    /// Adds `tag`; one caller at a time (the client's opening lock), never one already in.
    pub(crate) fn insert(&self, tag: Arc<Tag>) {
        let at = self.hasher.hash_one(tag.name()) as usize;
        let mut tag = Some(tag);
        for probe in 0..PROBES {
            let slot = &self.slots[(at + probe) & (SLOTS - 1)];
            if slot.get().is_none() {
                let _ = slot.set(tag.take().expect("set once"));
                return;
            }
        }
        let tag = tag.expect("not set");
        let mut overflow = self.overflow.lock().unwrap_or_else(|p| p.into_inner());
        overflow.insert(tag.name().to_owned(), tag);
    }

    /// Every open tag.
    pub(crate) fn all(&self) -> Vec<Arc<Tag>> {
        let overflow = self.overflow.lock().unwrap_or_else(|p| p.into_inner());
        self.slots
            .iter()
            .filter_map(|slot| slot.get().cloned())
            .chain(overflow.values().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_past_the_tables_room_are_found_in_the_overflow() {
        let tags = OpenTags::default();
        let names: Vec<String> = (0..SLOTS * 2).map(|i| format!("tag-{i}")).collect();
        for name in &names {
            assert!(tags.find(name).is_none());
            tags.insert(Arc::new(Tag::closed_for_test(name)));
        }
        for name in &names {
            assert_eq!(tags.find(name).unwrap().name(), name);
        }
        assert!(tags.find("tag-x").is_none());
        assert_eq!(tags.all().len(), names.len());
        assert!(
            !tags.overflow.lock().unwrap().is_empty(),
            "the test fills the table"
        );
    }
}
