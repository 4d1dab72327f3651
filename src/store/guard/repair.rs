//! After a restore (or any loss): raise every counter and time mark past what could have
//! been handed out, and give the store a new identity that replaces the old.

use super::{now_ms, number, past, raise_record, Shared, LOST, MARK_FLOOR, REPLACES, STORE_ID};
use crate::store::segment::SegmentStore;
use crate::store::StoreError;
use std::collections::BTreeMap;
use std::time::Duration;

/// What [`StoreUrl::repair`](crate::StoreUrl::repair) did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairReport {
    /// The store's new identity.
    pub identity: String,
    /// The identities it replaces (the store's before, and this machine's memory of it).
    pub replaces: Vec<String>,
    /// Tags whose counter was raised: (tag, from, to).
    pub raised: Vec<(String, u64, u64)>,
    /// Tags that were gone and were created again above what they handed out: (tag, at).
    pub recreated: Vec<(String, u64)>,
    /// The lowest time mark a lease is granted from now on (Unix ms).
    pub mark_floor_ms: u64,
    /// The store had no uidgen records and no tags: never used, or not the store meant.
    pub was_empty: bool,
}

impl std::fmt::Display for RepairReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.was_empty {
            writeln!(
                f,
                "note: the store had no uidgen records and no tags (never used, or not the \
                 store you meant?)"
            )?;
        }
        for (tag, from, to) in &self.raised {
            writeln!(f, "tag {tag:?}: counter raised from {from} to {to}")?;
        }
        for (tag, at) in &self.recreated {
            writeln!(f, "tag {tag:?}: was gone; created again at {at}")?;
        }
        writeln!(
            f,
            "time marks: no lease starts below {} (Unix ms)",
            self.mark_floor_ms
        )?;
        write!(
            f,
            "new store identity {:?}, replacing {}",
            self.identity,
            if self.replaces.is_empty() {
                "none".to_owned()
            } else {
                self.replaces.join(", ")
            }
        )
    }
}

/// Repairs the store of `shared`: `segments` (its raw segment store, in `segment_scope`)
/// raised by `margin` above every counter and floor, marks floored at now + `ahead`.
pub(crate) fn repair(
    shared: &Shared,
    segments: &dyn SegmentStore,
    segment_scope: &str,
    margin: u64,
    ahead: Duration,
) -> Result<RepairReport, StoreError> {
    if margin == 0 {
        return Err(StoreError::InvalidSegment {
            store: segments.kind().name(),
            tag: "*".into(),
            problem: "the repair margin is 0: it must be at least 1 (default 1,000,000)".into(),
        });
    }
    let records = shared.records();
    let all = records.all()?;
    let was_empty = all.is_empty();
    let mut floors: BTreeMap<String, u64> = BTreeMap::new();
    let mut steps: BTreeMap<String, u64> = BTreeMap::new();
    let prefix_floor = format!("floor:{segment_scope}\t");
    let prefix_tag = format!("tag:{segment_scope}\t");
    for (name, value) in &all {
        if let Some(tag) = name.strip_prefix(&prefix_floor) {
            floors.insert(tag.to_owned(), number(Some(value)));
        } else if let Some(tag) = name.strip_prefix(&prefix_tag) {
            let step = value
                .split_whitespace()
                .skip_while(|w| *w != "step")
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(1000);
            steps.insert(tag.to_owned(), step);
        }
    }
    let remembered = match shared.memory() {
        Some(memory) => memory.read()?,
        None => Default::default(),
    };
    for ((scope, tag), end) in &remembered.tags {
        if scope == segment_scope {
            let floor = floors.entry(tag.clone()).or_default();
            *floor = (*floor).max(*end);
        }
    }
    let too_high = |tag: &str, at: u64| {
        crate::store::segment::counter_overflow(
            segments.kind().name(),
            tag,
            &at.to_string(),
            margin,
        )
    };
    let mut raised = Vec::new();
    for record in segments.tags()? {
        let tag = record.tag.clone();
        let mut current = record.max_id;
        loop {
            let target = past(current.max(floors.get(&tag).copied().unwrap_or(0)), margin)
                .ok_or_else(|| too_high(&tag, current))?;
            if segments.raise(&tag, current, target)? {
                raised.push((tag.clone(), current, target));
                raise_record(records, &super::floor_name(segment_scope, &tag), target)?;
                break;
            }
            // Moved meanwhile (a process still running): read it again.
            match segments.tag(&tag)? {
                Some(now) => current = now.max_id,
                None => break,
            }
        }
        floors.remove(&tag);
    }
    let mut recreated = Vec::new();
    for (tag, floor) in floors {
        if floor == 0 {
            continue;
        }
        let at = past(floor, margin).ok_or_else(|| too_high(&tag, floor))?;
        let step = steps.get(&tag).copied().unwrap_or(1000);
        if segments.create(&tag, at, step, "")? {
            recreated.push((tag.clone(), at));
        }
        raise_record(records, &super::floor_name(segment_scope, &tag), at)?;
    }
    let ahead_ms = u64::try_from(ahead.as_millis()).unwrap_or(u64::MAX);
    let mark_floor_ms = now_ms().saturating_add(ahead_ms);
    raise_record(records, MARK_FLOOR, mark_floor_ms)?;

    let old = records.get(&[STORE_ID, REPLACES, super::LOST_IDENTITIES])?;
    let mut replaces: Vec<String> = old[1]
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let mut replaced_now = Vec::new();
    // The store's identity, this machine's memory of it, and every identity processes
    // saw vanish (left with their word): machines that knew any of them accept the new.
    let lost_ones = old[2].clone().unwrap_or_default();
    let known = [old[0].clone(), remembered.identity.clone()]
        .into_iter()
        .flatten()
        .map(|id| id.split_whitespace().next().unwrap_or_default().to_owned())
        .chain(lost_ones.split_whitespace().map(str::to_owned))
        .collect::<Vec<_>>();
    for id in known {
        if !id.is_empty() && !replaces.contains(&id) {
            replaces.push(id.clone());
            replaced_now.push(id);
        }
    }
    let identity = super::new_identity();
    // Identities are compared whole; `replaces` lists their random parts.
    records.put(REPLACES, &replaces.join(" "))?;
    records.put(STORE_ID, &identity)?;
    records.put(LOST, "")?;
    records.put(super::LOST_IDENTITIES, "")?;
    shared.adopt_repaired(&identity)?;
    Ok(RepairReport {
        identity,
        replaces: replaced_now,
        was_empty: was_empty && raised.is_empty() && recreated.is_empty(),
        raised,
        recreated,
        mark_floor_ms,
    })
}
