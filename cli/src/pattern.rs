//! How a `uidgen bench` run uses its generators: a command-line value (`--pattern`),
//! read by the argument grammar and by the bench that runs it.

use std::fmt;
use std::str::FromStr;

/// How a run uses its generators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// One generator, every thread taking IDs flat out.
    Single,
    /// This many generators, each thread calling them in turn (0, 1, …, N-1, 0, …) flat
    /// out.
    Alternate(usize),
    /// Short-lived threads, each taking one ID from one generator and exiting.
    Churn,
    /// Many threads, each taking one ID every interval.
    Light,
}

impl Pattern {
    /// The fewest generators `alternate` takes.
    pub const ALTERNATE_MIN: usize = 2;
    /// The most generators `alternate` takes.
    pub const ALTERNATE_MAX: usize = 64;

    /// How many generators the pattern uses.
    pub fn generators(self) -> usize {
        match self {
            Pattern::Alternate(n) => n,
            Pattern::Single | Pattern::Churn | Pattern::Light => 1,
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Single => f.write_str("single"),
            Pattern::Alternate(n) => write!(f, "alternate:{n}"),
            Pattern::Churn => f.write_str("churn"),
            Pattern::Light => f.write_str("light"),
        }
    }
}

impl FromStr for Pattern {
    type Err = String;

    /// `single`, `alternate:N` (N from 2 to 64), `churn` or `light`.
    fn from_str(text: &str) -> Result<Self, String> {
        let (min, max) = (Pattern::ALTERNATE_MIN, Pattern::ALTERNATE_MAX);
        match text.split_once(':') {
            None => match text {
                "single" => Ok(Pattern::Single),
                "churn" => Ok(Pattern::Churn),
                "light" => Ok(Pattern::Light),
                "alternate" => Err(format!(
                    "alternate needs a count of generators: alternate:N with N from {min} to {max}"
                )),
                _ => Err(format!(
                    "expected single, alternate:N (N from {min} to {max}), churn or light"
                )),
            },
            Some(("alternate", count)) => match count.trim().parse::<usize>() {
                Ok(n) if (min..=max).contains(&n) => Ok(Pattern::Alternate(n)),
                _ => Err(format!(
                    "alternate:N takes N from {min} to {max} generators, got {count:?}"
                )),
            },
            Some(_) => Err(format!(
                "expected single, alternate:N (N from {min} to {max}), churn or light; only \
                 alternate takes a count"
            )),
        }
    }
}
