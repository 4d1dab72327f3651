#![doc = include_str!("../README.md")]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

mod bits;
mod cached;
mod clock;
mod default_gen;
mod end_warning;
mod error;
mod generator;
mod local;
mod padding;
mod parts;
mod reject;
pub mod ring;
mod rollback;
mod sync;
mod time;
pub mod worker;

pub use bits::{BitsAllocator, LayoutBuilder, Preset, TimeUnit, TOTAL_BITS};
pub use cached::{CachedStats, CachedUidGenerator, CachedUidGeneratorBuilder, PADDING_THREAD_NAME};
pub use clock::{Clock, ManualClock, SystemClock};
pub use default_gen::{DefaultUidGenerator, DefaultUidGeneratorBuilder};
pub use end_warning::DEFAULT_WARN_BEFORE_END;
pub use error::{ConfigError, UidError};
pub use generator::UidGenerator;
pub use parts::UidParts;
pub use reject::{PutRejectHandler, RejectedPut, RejectedTake, TakeDecision, TakeRejectPolicy};
pub use rollback::RollbackStrategy;
#[cfg(feature = "sqlite")]
pub use worker::EmbeddedWorkerIdAssigner;
#[cfg(feature = "mysql")]
pub use worker::MySqlWorkerIdAssigner;
pub use worker::{FixedWorkerId, WorkerAssignment, WorkerIdAssigner, WorkerIdError};
