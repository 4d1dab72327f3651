//! No code: see tests/.
