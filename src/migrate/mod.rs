//! Moving to uidgen from another ID scheme: a plan under which every new ID sorts above
//! the old scheme's highest ID (or, where nothing fits above it, never equals an old ID),
//! with the arithmetic that proves it. `uidgen migrate plan` prints it; the generators'
//! `floor` holds them to it at run time.

mod plan;

pub use plan::{Guarantee, MigrationPlan, Needs, OldScheme, PlanError, SegmentPlan, TimeBasedPlan};
