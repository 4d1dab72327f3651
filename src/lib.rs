#![doc = include_str!("../README.md")]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

mod bits;
mod clock;
mod default_gen;
mod error;
mod generator;
mod parts;
mod sync;
mod time;

pub use bits::{BitsAllocator, LayoutBuilder, Preset, TimeUnit, TOTAL_BITS};
pub use clock::{Clock, ManualClock, SystemClock};
pub use default_gen::{DefaultUidGenerator, DefaultUidGeneratorBuilder};
pub use error::{ConfigError, UidError};
pub use generator::UidGenerator;
pub use parts::UidParts;
