//! Where the worker ID and the stores come from: the only reader of the worker options
//! and of the environment's UIDGEN_MYSQL_URL and UIDGEN_WORKER_DB (the dispatcher calls it
//! once per command), and the only place a store is opened ([`StoreChoice::open`]).
//!
//! Exactly one source may be given, by option or by environment variable; two are an
//! error naming both, never a silent choice. An empty environment variable counts as
//! unset.

use crate::args::WorkerArgs;
use crate::output::{Context, Failure};
use crate::Env;
use std::path::PathBuf;
use std::time::Duration;
use uidgen::{
    BitsAllocator, EmbeddedWorkerIdAssigner, FixedWorkerId, LeaseStore, SegmentStore, StoreUrl,
    WorkerAssignment, WorkerIdAssigner, WorkerIdError, WorkerIdUsage, WorkerLease,
};

/// The CLI's cap on borrowed time: `uidgen serve`'s default, what `uidgen store repair
/// --ahead` assumes, and how far ahead a wiped embedded store starts its leases.
pub(crate) const MAX_TIME_AHEAD: Duration = uidgen::WIPED_STORE_AHEAD;

pub(crate) const MYSQL_URL_ENV: &str = "UIDGEN_MYSQL_URL";
pub(crate) const WORKER_DB_ENV: &str = "UIDGEN_WORKER_DB";

/// The one source of the worker ID, with the name of the setting that chose it.
pub(crate) enum Source {
    /// A lease from a store (the embedded one by default): the lowest free worker ID, or
    /// the one given with `--worker-id`, checked against its time mark either way.
    Lease {
        store: StoreChoice,
        worker_id: Option<u64>,
        /// `--lease-ttl`, else the library's default.
        ttl: Option<Duration>,
        /// `--worker-ids`, else every worker ID the layout holds.
        range: Option<uidgen::WorkerIdRange>,
    },
    /// UidGenerator's WORKER_NODE: a new row, and worker ID, per launch.
    MySql {
        url: String,
        create_table: bool,
        timeout: Option<Duration>,
    },
}

/// Where leases are kept.
pub(crate) enum StoreChoice {
    /// The embedded SQLite file: this one, or the default path.
    Embedded(Option<PathBuf>),
    /// `--store URL`.
    Url(String),
}

/// A worker ID taken for this launch: leased ones are released when this is dropped
/// (or handed to a generator, which releases it when dropped).
pub(crate) struct Taken {
    pub(crate) worker_id: u64,
    pub(crate) lease: Option<WorkerLease>,
    pub(crate) source: String,
}

/// A non-empty environment variable.
fn var(env: Env, name: &str) -> Option<std::ffi::OsString> {
    env(name).filter(|value| !value.is_empty())
}

impl Source {
    /// Reads the worker options and the environment; refuses conflicting settings.
    pub(crate) fn from_args(args: &WorkerArgs, env: Env) -> Result<Self, Failure> {
        let env_url = var(env, MYSQL_URL_ENV);
        let env_db = var(env, WORKER_DB_ENV);
        // An option beats the environment variable of the same setting.
        let mysql = match (&args.mysql_url, &env_url) {
            (Some(url), _) => Some((url.clone(), "--mysql-url")),
            (None, Some(url)) => {
                let url = url
                    .to_str()
                    .ok_or_else(|| Failure::msg(format!("{MYSQL_URL_ENV} is not valid UTF-8")))?;
                Some((url.to_owned(), "the environment variable UIDGEN_MYSQL_URL"))
            }
            (None, None) => None,
        };
        let db = match (&args.worker_db, env_db) {
            (Some(path), _) => Some((path.clone(), "--worker-db")),
            (None, Some(path)) => Some((
                PathBuf::from(path),
                "the environment variable UIDGEN_WORKER_DB",
            )),
            (None, None) => None,
        };
        // --worker-id goes with a store (its mark is kept there), not with MySQL's
        // one-row-per-launch registry.
        let given: Vec<&str> = [
            args.worker_id
                .filter(|_| mysql.is_some())
                .map(|_| "--worker-id"),
            mysql.as_ref().map(|m| m.1),
            db.as_ref().map(|d| d.1),
            args.store.as_ref().map(|_| "--store"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if given.len() > 1 {
            let hint = if given.iter().any(|g| g.contains("environment")) {
                " (an empty environment variable counts as unset)"
            } else {
                ""
            };
            return Err(Failure::msg(format!(
                "conflicting settings: {} each choose where the worker ID comes from; keep \
                 one{hint}",
                join_and(&given)
            )));
        }
        if mysql.is_none() {
            for (set, option) in [
                (args.create_table, "--create-table"),
                (args.mysql_timeout.is_some(), "--mysql-timeout"),
            ] {
                if set {
                    return Err(Failure::msg(format!(
                        "{option} applies only to a MySQL registry: give --mysql-url (or set \
                         {MYSQL_URL_ENV}) too, or leave {option} out"
                    )));
                }
            }
        } else {
            for (set, option) in [
                (args.lease_ttl.is_some(), "--lease-ttl"),
                (args.worker_ids.is_some(), "--worker-ids"),
            ] {
                if set {
                    return Err(Failure::msg(format!(
                        "{option} applies only to leases, and --mysql-url (or \
                         UIDGEN_MYSQL_URL) chooses UidGenerator's WORKER_NODE registry, which \
                         has none; leave one out"
                    )));
                }
            }
        }
        Ok(match (mysql, &args.store) {
            (Some((url, _)), _) => Source::MySql {
                url,
                create_table: args.create_table,
                timeout: args.mysql_timeout,
            },
            (None, Some(url)) => Source::Lease {
                store: StoreChoice::Url(url.clone()),
                worker_id: args.worker_id,
                ttl: args.lease_ttl,
                range: args.worker_ids,
            },
            (None, None) => Source::Lease {
                store: StoreChoice::Embedded(db.map(|d| d.0)),
                worker_id: args.worker_id,
                ttl: args.lease_ttl,
                range: args.worker_ids,
            },
        })
    }

    /// Refuses a `--worker-ids` range smaller than what one run takes at once: waiting
    /// for leases to expire would never help.
    pub(crate) fn range_holds(&self, needed: usize, who: &str) -> Result<(), Failure> {
        match self.range() {
            Some(range) if (needed as u64) > range.len() => Err(Failure::msg(format!(
                "{who} take {needed} worker IDs, and --worker-ids {range} holds {}: give a \
                 wider range",
                range.len()
            ))),
            _ => Ok(()),
        }
    }

    /// `--worker-ids`, if given (leases only).
    pub(crate) fn range(&self) -> Option<uidgen::WorkerIdRange> {
        match self {
            Source::Lease { range, .. } => *range,
            Source::MySql { .. } => None,
        }
    }

    /// The lease store chosen, if leases are used.
    pub(crate) fn store(&self) -> Result<Box<dyn LeaseStore>, Failure> {
        match self {
            Source::Lease { store, .. } => store.open(),
            Source::MySql { .. } => Err(Failure::msg(
                "--mysql-url chooses UidGenerator's WORKER_NODE registry, which has no leases; \
                 give --store mysql://... to keep leases on MySQL",
            )),
        }
    }

    /// Checks what can be checked without taking an ID (for `next -n 0`).
    pub(crate) fn check(&self, bits: &BitsAllocator) -> Result<(), Failure> {
        match self {
            Source::Lease {
                worker_id, range, ..
            } => {
                if let Some(id) = worker_id {
                    FixedWorkerId(*id).assign_worker_id(bits)?;
                }
                if let Some(range) = range {
                    range.check(bits)?;
                    if let Some(id) = worker_id.filter(|id| !range.contains(*id)) {
                        return Err(Failure::msg(format!(
                            "--worker-id {id} is outside --worker-ids {range}: choose one in \
                             the range, or leave --worker-id out"
                        )));
                    }
                }
            }
            Source::MySql { url, .. } => check_mysql_layout(url, bits)?,
        }
        Ok(())
    }

    /// `worker list` for UidGenerator's WORKER_NODE registry (`--mysql-url`): the
    /// registry and its usage (rows used, launches left); `None` for a lease store.
    pub(crate) fn registry_usage(
        &self,
        bits: &BitsAllocator,
    ) -> Result<Option<(String, WorkerIdUsage)>, Failure> {
        match self {
            Source::MySql {
                url,
                create_table,
                timeout,
            } => mysql_usage(url, *create_table, *timeout, bits).map(Some),
            Source::Lease { .. } => Ok(None),
        }
    }

    /// Takes the worker ID: a lease (given back when dropped), or a WORKER_NODE row.
    /// A leased worker ID prefers one whose mark is at most `prefer_within` ahead of the
    /// clock (the generator's own bound on waiting for a mark or borrowing past it).
    pub(crate) fn take(
        &self,
        bits: &BitsAllocator,
        prefer_within: std::time::Duration,
    ) -> Result<Taken, Failure> {
        match self {
            Source::Lease {
                store,
                worker_id,
                ttl,
                range,
            } => {
                // A range that does not fit is refused before the store is opened.
                self.check(bits)?;
                // A worker ID whose mark is far ahead (a clock that ran ahead) is passed
                // over for one the capped generator can use now.
                let mut builder = WorkerLease::builder(store.open::<Box<dyn LeaseStore>>()?)
                    .prefer_marks_within(prefer_within);
                if let Some(ttl) = ttl {
                    builder = builder.ttl(*ttl);
                }
                if let Some(range) = range {
                    builder = builder.worker_ids(*range);
                }
                let lease = match worker_id {
                    Some(id) => builder.acquire_id(bits, *id)?,
                    None => builder.acquire(bits)?,
                };
                Ok(Taken {
                    worker_id: lease.worker_id(),
                    source: format!("a lease from {}", lease.store()),
                    lease: Some(lease),
                })
            }
            Source::MySql { .. } => {
                let assigned = self.assign(bits)?;
                Ok(Taken {
                    worker_id: assigned.worker_id,
                    lease: None,
                    source: assigned.source,
                })
            }
        }
    }

    /// `count` spare worker IDs for `--on-rollback spare:N`: the store's lowest free ones
    /// (whatever `--worker-id` says, which names the main one), or WORKER_NODE rows.
    pub(crate) fn take_spares(
        &self,
        bits: &BitsAllocator,
        count: usize,
        prefer_within: std::time::Duration,
    ) -> Result<Vec<Taken>, Failure> {
        let any_free;
        let from = match self {
            Source::Lease {
                store, ttl, range, ..
            } => {
                any_free = Source::Lease {
                    store: store.clone(),
                    worker_id: None,
                    ttl: *ttl,
                    range: *range,
                };
                &any_free
            }
            Source::MySql { .. } => self,
        };
        (0..count)
            .map(|_| {
                from.take(bits, prefer_within).map_err(|err| match err {
                    Failure::Error(source) => Failure::Error(Box::new(Context {
                        doing: format!(
                            "--on-rollback spare:{count} takes {count} worker IDs beside the \
                             main one ({} in all)",
                            count + 1
                        ),
                        source,
                    })),
                    other => other,
                })
            })
            .collect()
    }

    /// `count` worker IDs: consecutive ones from `--worker-id`, or the store's lowest
    /// free ones, or `count` WORKER_NODE rows.
    pub(crate) fn take_many(
        &self,
        bits: &BitsAllocator,
        count: usize,
    ) -> Result<Vec<Taken>, Failure> {
        self.range_holds(count, &format!("{count} generators"))?;
        let Source::Lease {
            store,
            worker_id: Some(first),
            ttl,
            range,
        } = self
        else {
            return (0..count)
                .map(|_| self.take(bits, MAX_TIME_AHEAD))
                .collect();
        };
        let last = first.saturating_add(count.saturating_sub(1) as u64);
        (*first..=last)
            .map(|id| {
                Source::Lease {
                    store: store.clone(),
                    worker_id: Some(id),
                    ttl: *ttl,
                    range: *range,
                }
                .take(bits, MAX_TIME_AHEAD)
                .map_err(|err| match err {
                    Failure::Error(source) if count > 1 => Failure::Error(Box::new(Context {
                        doing: format!(
                            "{count} generators take the consecutive worker IDs {first} to \
                             {last} from --worker-id"
                        ),
                        source,
                    })),
                    other => other,
                })
            })
            .collect()
    }

    /// A WORKER_NODE row on MySQL.
    fn assign(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, Failure> {
        match self {
            Source::MySql {
                url,
                create_table,
                timeout,
            } => assign_from_mysql(url, *create_table, *timeout, bits),
            Source::Lease { .. } => Err(Failure::msg("a lease store has no WORKER_NODE rows")),
        }
    }
}

fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `--mysql-url`'s registry. The layout guard is the library's: a layout with fewer than
/// 16 worker bits is refused, since every run of the command is a launch that uses up a
/// worker ID (the command has no opt-in: a run a minute would use up the default
/// layout's in a day).
#[cfg(feature = "mysql")]
fn mysql_registry(
    url: &str,
    create_table: bool,
    timeout: Option<Duration>,
) -> Result<uidgen::MySqlWorkerIdAssigner, Failure> {
    let mut assigner = uidgen::MySqlWorkerIdAssigner::new(url)?.create_table(create_table);
    if let Some(timeout) = timeout {
        assigner = assigner.timeout(timeout);
    }
    Ok(assigner)
}

#[cfg(feature = "mysql")]
fn assign_from_mysql(
    url: &str,
    create_table: bool,
    timeout: Option<Duration>,
    bits: &BitsAllocator,
) -> Result<WorkerAssignment, Failure> {
    mysql_registry(url, create_table, timeout)?
        .assign_worker_id(bits)
        .map_err(in_cli_words)
}

#[cfg(feature = "mysql")]
fn check_mysql_layout(url: &str, bits: &BitsAllocator) -> Result<(), Failure> {
    mysql_registry(url, false, None)?
        .check_layout(bits)
        .map_err(in_cli_words)
}

#[cfg(feature = "mysql")]
fn mysql_usage(
    url: &str,
    create_table: bool,
    timeout: Option<Duration>,
    bits: &BitsAllocator,
) -> Result<(String, WorkerIdUsage), Failure> {
    let registry = mysql_registry(url, create_table, timeout)?;
    let usage = registry.usage_blocking(bits)?;
    Ok((format!("{} (WORKER_NODE)", registry.location()), usage))
}

/// The library's refusal of a small layout, said with the command's options.
#[cfg_attr(not(feature = "mysql"), allow(dead_code))]
fn in_cli_words(err: WorkerIdError) -> Failure {
    match err {
        WorkerIdError::SmallWorkerSpace {
            worker_bits,
            launches,
            ..
        } => Failure::msg(format!(
            "--mysql-url (or {MYSQL_URL_ENV}) takes a new WORKER_NODE row, and worker ID, on \
             every run and never reuses one, and the layout has {worker_bits} worker bits: \
             that allows {launches} runs in all, after which no run can start. Keep leases \
             on the same server instead with --store mysql://... (a released worker ID is \
             reused above its time mark, so runs never run out), or give a layout with at \
             least {} worker bits (--layout uidgenerator-readme has 21)",
            uidgen::MIN_ROW_PER_LAUNCH_WORKER_BITS
        )),
        other => other.into(),
    }
}

#[cfg(not(feature = "mysql"))]
fn no_mysql() -> Failure {
    Failure::msg(format!(
        "this uidgen was built without MySQL support: rebuild it with --features mysql, or \
         leave out --mysql-url and unset {MYSQL_URL_ENV} to use the embedded registry"
    ))
}

#[cfg(not(feature = "mysql"))]
fn assign_from_mysql(
    _: &str,
    _: bool,
    _: Option<Duration>,
    _: &BitsAllocator,
) -> Result<WorkerAssignment, Failure> {
    Err(no_mysql())
}

#[cfg(not(feature = "mysql"))]
fn check_mysql_layout(_: &str, _: &BitsAllocator) -> Result<(), Failure> {
    Ok(())
}

#[cfg(not(feature = "mysql"))]
fn mysql_usage(
    _: &str,
    _: bool,
    _: Option<Duration>,
    _: &BitsAllocator,
) -> Result<(String, WorkerIdUsage), Failure> {
    Err(no_mysql())
}

/// `worker list --json`'s account of a layout's worker IDs.
pub(crate) fn usage_json(usage: &WorkerIdUsage) -> serde_json::Value {
    serde_json::json!({
        "used": usage.used,
        "remaining": usage.remaining,
        "max_worker_id": usage.max_worker_id,
        "reused": usage.reused,
    })
}

impl Clone for StoreChoice {
    fn clone(&self) -> Self {
        match self {
            StoreChoice::Embedded(path) => StoreChoice::Embedded(path.clone()),
            StoreChoice::Url(url) => StoreChoice::Url(url.clone()),
        }
    }
}

impl StoreChoice {
    /// `--store`'s value if given, else the embedded store (UIDGEN_WORKER_DB if set).
    pub(crate) fn from_option(store: Option<&str>, env: Env) -> Self {
        match store {
            Some(url) => StoreChoice::Url(url.to_owned()),
            None => StoreChoice::Embedded(var(env, WORKER_DB_ENV).map(PathBuf::from)),
        }
    }

    /// The counters of a segment bench: `--store`, else `--worker-db`, else the embedded
    /// store (UIDGEN_WORKER_DB if set). The options that choose worker IDs are refused:
    /// segment mode has none.
    pub(crate) fn for_segments(args: &WorkerArgs, env: Env) -> Result<Self, Failure> {
        if args.worker_id.is_some() || args.mysql_url.is_some() || args.lease_ttl.is_some() {
            return Err(Failure::msg(
                "--worker-id, --mysql-url and --lease-ttl choose worker IDs, which segment mode \
                 has none of; leave them out (--store chooses the counters' store)",
            ));
        }
        Ok(match (&args.store, &args.worker_db) {
            (Some(url), _) => StoreChoice::Url(url.clone()),
            (None, Some(path)) => StoreChoice::Embedded(Some(path.clone())),
            (None, None) => StoreChoice::from_option(None, env),
        })
    }

    /// Opens the store, through the library's one URL parser: the embedded file, or
    /// whatever `--store` names (a typo is refused, never taken for a file).
    pub(crate) fn open<T: OpenStore>(&self) -> Result<T, Failure> {
        Ok(T::open(&self.url()?)?)
    }

    /// The store's URL, through the library's one URL parser.
    pub(crate) fn url(&self) -> Result<StoreUrl, Failure> {
        Ok(match self {
            StoreChoice::Embedded(Some(path)) => StoreUrl::sqlite(path.clone())?,
            // In the binary UIDGEN_WORKER_DB is unset or empty here (a value was taken
            // above), so this is the user's data folder.
            StoreChoice::Embedded(None) => {
                let path = EmbeddedWorkerIdAssigner::default_path().ok_or_else(|| {
                    Failure::msg(format!(
                        "no data directory is known for this user; set {WORKER_DB_ENV} or \
                         give --store with a file path"
                    ))
                })?;
                StoreUrl::sqlite(path)?
            }
            StoreChoice::Url(url) => StoreUrl::parse(url)?,
        })
    }
}

/// A kind of store the command opens: worker-ID leases or segment counters.
pub(crate) trait OpenStore: Sized {
    fn open(url: &StoreUrl) -> Result<Self, uidgen::StoreError>;
}

impl OpenStore for Box<dyn LeaseStore> {
    fn open(url: &StoreUrl) -> Result<Self, uidgen::StoreError> {
        url.lease_store()
    }
}

impl OpenStore for Box<dyn SegmentStore> {
    fn open(url: &StoreUrl) -> Result<Self, uidgen::StoreError> {
        url.segment_store()
    }
}
