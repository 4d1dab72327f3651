//! Why the service could not start.

use crate::error::shown_tag;
use uidgen::{SegmentError, StoreError};

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A setting is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The store URL cannot be read or the store cannot be opened.
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    /// No worker ID could be leased.
    #[error("no worker ID for the snowflake generator: {0}")]
    WorkerId(#[from] uidgen::WorkerIdError),
    /// The snowflake generator could not be built.
    #[error("the snowflake generator: {0}")]
    Generator(#[from] uidgen::ConfigError),
    /// A configured segment tag could not be set up.
    #[error("segment tag {tag}: {source}")]
    Segment {
        /// The tag (quoted, shortened).
        tag: String,
        /// Why.
        source: Box<SegmentError>,
    },
    /// A configured tag the store does not have, with no `tag_start` to create it: in the
    /// words of whoever configures the service (its settings and `uidgen`'s flags).
    #[error(
        "segment tag {tag} does not exist in {location}: create it with `uidgen segment \
         create --tag TAG --step N [--start FIRST]`, or let the service create the missing \
         tags of tags and [[residue_tags]] at FIRST with tag_start = FIRST (--tag-start, \
         UIDGEN_TAG_START); if it existed before (a store restored or emptied), FIRST must \
         be above the last ID it handed out"
    )]
    MissingTag {
        /// The tag (quoted, shortened).
        tag: String,
        /// The store that lacks it, as it describes itself.
        location: String,
    },
    /// A residue tag a store lacks, with no `tag_start` to create its classes.
    #[error(
        "residue tag {tag}: {location} has no such tag; let the service create every \
         class's row with tag_start = FIRST (--tag-start, UIDGEN_TAG_START), each class's \
         IDs then at or above FIRST (uidgen segment create cannot make a residue class's row)"
    )]
    MissingResidueTag {
        /// The tag (quoted, shortened).
        tag: String,
        /// The store that lacks it, as it describes itself.
        location: String,
    },
    /// The threads for opaque batches could not be started.
    #[error("cannot start the threads for opaque batches: {0}")]
    Threads(std::io::Error),
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl StartError {
    /// A tag (a residue tag if `residue`) that could not be set up; a missing one says
    /// how to have it created.
    pub(super) fn tag(tag: &str, residue: bool, source: SegmentError) -> Self {
        let tag = shown_tag(tag);
        match source {
            SegmentError::Store(StoreError::MissingTag { location, .. }) if residue => {
                Self::MissingResidueTag { tag, location }
            }
            SegmentError::Store(StoreError::MissingTag { location, .. }) => {
                Self::MissingTag { tag, location }
            }
            _ => Self::Segment {
                tag,
                source: Box::new(source),
            },
        }
    }
}
