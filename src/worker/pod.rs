//! Worker IDs in Kubernetes: a StatefulSet pod's ordinal. A StatefulSet names its pods
//! `NAME-0`, `NAME-1`, ..., keeps each name across restarts and runs at most one pod of
//! a name at a time, so the ordinal is a worker ID no other replica holds.

use super::{WorkerAssignment, WorkerIdAssigner, WorkerIdError};
use crate::layout::BitsAllocator;

/// The environment variable a pod's name is read from (Kubernetes sets it to the pod's
/// name).
const HOSTNAME_ENV: &str = "HOSTNAME";

/// A worker ID from a Kubernetes StatefulSet pod's ordinal: the digits after the last `-`
/// of the pod's name (`web-12` gives 12), plus an offset (so several StatefulSets can
/// share a layout's worker IDs: give each its own range).
///
/// The name is `$HOSTNAME` ([`from_hostname`](Self::from_hostname); Kubernetes sets it to
/// the pod's name; `/etc/hostname` if it is unset), or one you give
/// ([`pod_name`](Self::pod_name), for example from the downward API's `metadata.name`). A
/// host name with dots counts only up to the first one. A name without an ordinal is an
/// error naming it; an ordinal whose worker ID (ordinal + offset) is past the layout's
/// `max_worker_id` is an error naming both.
///
/// The worker ID is a fixed one: give it to a builder with `.worker_id_from(..)`, and its
/// time mark is kept in the process like any fixed ID's. A restarted pod is a new
/// process, so when the pod's last run may have used ticks ahead of the clock (a cached
/// generator under load borrows them) and it restarts within that time, lease the same
/// worker ID from a store instead: `WorkerLease::builder(store).acquire_id(&bits, id)`,
/// whose mark survives the restart.
///
/// ```
/// use uidgen::{BitsAllocator, CachedUidGenerator, PodOrdinal, UidGenerator, WorkerIdAssigner};
///
/// let bits = BitsAllocator::default(); // worker IDs 0 to 1023
/// let pod = PodOrdinal::pod_name("web-12").offset(100);
/// assert_eq!(pod.assign_worker_id(&bits)?.worker_id, 112);
///
/// // In the pod itself: PodOrdinal::from_hostname().
/// let generator = CachedUidGenerator::builder().worker_id_from(&pod)?.build()?;
/// assert_eq!(generator.parse_uid(generator.next_uid()?)?.worker_id, 112);
///
/// let err = PodOrdinal::pod_name("web").assign_worker_id(&bits).unwrap_err();
/// assert!(err.to_string().contains("\"web\""));
/// let err = PodOrdinal::pod_name("web-1000").offset(100).assign_worker_id(&bits).unwrap_err();
/// assert!(err.to_string().contains("ordinal 1000 + offset 100") && err.to_string().contains("1023"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodOrdinal {
    /// The pod name given, or `None` for `$HOSTNAME` (read when assigning).
    name: Option<String>,
    offset: u64,
}

impl PodOrdinal {
    /// The ordinal of this pod: its name from `$HOSTNAME`, read when the worker ID is
    /// assigned (or, if `HOSTNAME` is unset or empty, from `/etc/hostname`).
    pub fn from_hostname() -> Self {
        Self {
            name: None,
            offset: 0,
        }
    }

    /// The ordinal of the pod named `name` (`web-12`).
    pub fn pod_name(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            offset: 0,
        }
    }

    setters! {
        /// Added to the ordinal (default 0): pods `web-0`, `web-1`, ... get worker IDs
        /// `offset`, `offset + 1`, ...
        #[must_use]
        offset(offset: u64) => self.offset = offset;
    }

    /// The pod's name and its ordinal (without the offset).
    pub fn ordinal(&self) -> Result<(String, u64), WorkerIdError> {
        self.ordinal_with(&|name| std::env::var(name).ok(), &|| {
            std::fs::read_to_string("/etc/hostname").ok()
        })
    }

    /// [`ordinal`](Self::ordinal), with the environment and `/etc/hostname` given (tests).
    fn ordinal_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        etc_hostname: &dyn Fn() -> Option<String>,
    ) -> Result<(String, u64), WorkerIdError> {
        let (name, from) = match &self.name {
            Some(name) => (name.clone(), "the name given".to_owned()),
            None => match env(HOSTNAME_ENV).filter(|h| !h.trim().is_empty()) {
                Some(name) => (name, HOSTNAME_ENV.to_owned()),
                None => match etc_hostname().filter(|h| !h.trim().is_empty()) {
                    Some(name) => (name, "/etc/hostname".to_owned()),
                    None => {
                        return Err(WorkerIdError::NoPodName {
                            why: format!(
                                "{HOSTNAME_ENV} is unset or empty, and so is /etc/hostname"
                            ),
                        })
                    }
                },
            },
        };
        // A host name's first label is the pod's name.
        let name = name.trim();
        let name = name.split('.').next().unwrap_or(name).to_owned();
        let ordinal = name
            .rsplit_once('-')
            .map(|(_, digits)| digits)
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok());
        match ordinal {
            Some(ordinal) => Ok((name, ordinal)),
            None => Err(WorkerIdError::NoPodOrdinal { name, from }),
        }
    }

    fn assign_with(
        &self,
        bits: &BitsAllocator,
        (name, ordinal): (String, u64),
    ) -> Result<WorkerAssignment, WorkerIdError> {
        let worker_id = ordinal
            .checked_add(self.offset)
            .filter(|&id| id <= bits.max_worker_id());
        let Some(worker_id) = worker_id else {
            return Err(WorkerIdError::OrdinalPastMax {
                name,
                ordinal,
                offset: self.offset,
                max_worker_id: bits.max_worker_id(),
                worker_bits: bits.worker_bits(),
            });
        };
        let source = if self.offset == 0 {
            format!("the ordinal of pod {name}")
        } else {
            format!("the ordinal of pod {name} + offset {}", self.offset)
        };
        Ok(WorkerAssignment { worker_id, source })
    }
}

impl WorkerIdAssigner for PodOrdinal {
    fn assign_worker_id(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, WorkerIdError> {
        self.assign_with(bits, self.ordinal()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits() -> BitsAllocator {
        BitsAllocator::default()
    }

    fn assign(pod: &PodOrdinal) -> Result<u64, WorkerIdError> {
        pod.assign_worker_id(&bits()).map(|a| a.worker_id)
    }

    #[test]
    fn the_digits_after_the_last_dash_plus_the_offset() {
        assert_eq!(assign(&PodOrdinal::pod_name("web-12")).unwrap(), 12);
        assert_eq!(assign(&PodOrdinal::pod_name("web-0")).unwrap(), 0);
        assert_eq!(assign(&PodOrdinal::pod_name("my-web-app-7")).unwrap(), 7);
        assert_eq!(assign(&PodOrdinal::pod_name("web-007")).unwrap(), 7);
        assert_eq!(
            assign(&PodOrdinal::pod_name(
                "web-12.web.default.svc.cluster.local"
            ))
            .unwrap(),
            12
        );
        assert_eq!(
            assign(&PodOrdinal::pod_name("web-12").offset(500)).unwrap(),
            512
        );
        assert_eq!(
            assign(&PodOrdinal::pod_name("web-1023")).unwrap(),
            1023,
            "the layout's largest worker ID"
        );
    }

    #[test]
    fn a_name_without_an_ordinal_is_an_error_naming_it() {
        for name in [
            "web",
            "web-",
            "web-1a",
            "web-+1",
            "-",
            "web-99999999999999999999",
        ] {
            let err = assign(&PodOrdinal::pod_name(name)).unwrap_err();
            assert!(
                matches!(err, WorkerIdError::NoPodOrdinal { .. }),
                "{name}: {err}"
            );
            let message = err.to_string();
            assert!(
                message.contains(&format!("{name:?}")) && message.contains("NAME-0"),
                "{message}"
            );
        }
    }

    #[test]
    fn an_ordinal_past_the_maximum_names_both() {
        let err = assign(&PodOrdinal::pod_name("web-1024")).unwrap_err();
        assert!(
            matches!(
                err,
                WorkerIdError::OrdinalPastMax {
                    ordinal: 1024,
                    offset: 0,
                    max_worker_id: 1023,
                    ..
                }
            ),
            "{err}"
        );
        let message = err.to_string();
        assert!(
            message.contains("ordinal 1024") && message.contains("max_worker_id 1023"),
            "{message}"
        );
        let err = assign(&PodOrdinal::pod_name("web-24").offset(1000)).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("ordinal 24 + offset 1000 = worker ID 1024")
                && message.contains("max_worker_id 1023")
                && message.contains("10 worker bits"),
            "{message}"
        );
        let err = assign(&PodOrdinal::pod_name("web-1").offset(u64::MAX)).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("= worker ID {}", u128::from(u64::MAX) + 1)),
            "{err}"
        );
    }

    #[test]
    fn the_name_comes_from_hostname_then_etc_hostname() {
        let pod = PodOrdinal::from_hostname().offset(1);
        let env_web3 = |name: &str| (name == "HOSTNAME").then(|| "web-3".to_owned());
        let no_env = |_: &str| None;
        let etc = || Some("db-5\n".to_owned());
        let no_etc = || None;
        let got = pod.ordinal_with(&env_web3, &etc).unwrap();
        assert_eq!(got, ("web-3".to_owned(), 3));
        assert_eq!(pod.assign_with(&bits(), got).unwrap().worker_id, 4);
        assert_eq!(
            pod.ordinal_with(&no_env, &etc).unwrap(),
            ("db-5".to_owned(), 5)
        );
        let err = pod.ordinal_with(&no_env, &no_etc).unwrap_err();
        assert!(matches!(err, WorkerIdError::NoPodName { .. }), "{err}");
        assert!(err.to_string().contains("HOSTNAME"), "{err}");
        let plain = |name: &str| (name == "HOSTNAME").then(|| "laptop".to_owned());
        let err = pod.ordinal_with(&plain, &etc).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("\"laptop\"") && message.contains("from HOSTNAME"),
            "{message}"
        );
    }
}
