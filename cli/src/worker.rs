//! Where the worker ID comes from. Exactly one source may be given, by option or by
//! environment variable; two are an error naming both, never a silent choice. An empty
//! environment variable counts as unset.

use crate::args::WorkerArgs;
use crate::output::{Context, Failure};
use crate::Env;
use std::path::PathBuf;
use std::time::Duration;
use uidgen::{
    BitsAllocator, EmbeddedWorkerIdAssigner, FixedWorkerId, WorkerAssignment, WorkerIdAssigner,
};

pub(crate) const MYSQL_URL_ENV: &str = "UIDGEN_MYSQL_URL";
pub(crate) const WORKER_DB_ENV: &str = "UIDGEN_WORKER_DB";

/// The one source of the worker ID, with the name of the setting that chose it.
pub(crate) enum Source {
    Fixed(u64),
    MySql {
        url: String,
        create_table: bool,
        timeout: Option<Duration>,
    },
    /// The embedded registry, at this file or at the default path.
    Embedded(Option<PathBuf>),
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
        let given: Vec<&str> = [
            args.worker_id.map(|_| "--worker-id"),
            mysql.as_ref().map(|m| m.1),
            db.as_ref().map(|d| d.1),
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
        }
        Ok(match (args.worker_id, mysql, db) {
            (Some(id), _, _) => Source::Fixed(id),
            (None, Some((url, _)), _) => Source::MySql {
                url,
                create_table: args.create_table,
                timeout: args.mysql_timeout,
            },
            (None, None, db) => Source::Embedded(db.map(|d| d.0)),
        })
    }

    /// Checks what can be checked without taking an ID (for `next -n 0`).
    pub(crate) fn check(&self, bits: &BitsAllocator) -> Result<(), Failure> {
        if let Source::Fixed(id) = self {
            FixedWorkerId(*id).assign_worker_id(bits)?;
        }
        Ok(())
    }

    /// Takes the worker ID (a new registry row, unless it is fixed).
    pub(crate) fn assign(&self, bits: &BitsAllocator) -> Result<WorkerAssignment, Failure> {
        Ok(match self {
            Source::Fixed(id) => FixedWorkerId(*id).assign_worker_id(bits)?,
            Source::MySql {
                url,
                create_table,
                timeout,
            } => assign_from_mysql(url, *create_table, *timeout, bits)?,
            Source::Embedded(Some(path)) => {
                EmbeddedWorkerIdAssigner::new(path.clone()).assign_worker_id(bits)?
            }
            // The library's default path reads UIDGEN_WORKER_DB from the process
            // environment again; in the binary it is unset or empty here (a value was
            // taken above), so this is the user's data folder. Tests that inject an
            // environment always give a registry, and so never get here.
            Source::Embedded(None) => {
                EmbeddedWorkerIdAssigner::at_default_path()?.assign_worker_id(bits)?
            }
        })
    }

    /// `count` worker IDs: consecutive ones from a fixed ID, each checked against the
    /// layout, or `count` rows from a registry.
    pub(crate) fn assign_many(
        &self,
        bits: &BitsAllocator,
        count: usize,
    ) -> Result<Vec<u64>, Failure> {
        let Source::Fixed(first) = *self else {
            return (0..count)
                .map(|_| Ok(self.assign(bits)?.worker_id))
                .collect();
        };
        let last = first.saturating_add(count.saturating_sub(1) as u64);
        (first..=last)
            .map(|id| match FixedWorkerId(id).assign_worker_id(bits) {
                Ok(assigned) => Ok(assigned.worker_id),
                Err(err) if count > 1 => Err(Failure::Error(Box::new(Context {
                    doing: format!(
                        "{count} generators take the consecutive worker IDs {first} to {last} \
                         from --worker-id"
                    ),
                    source: Box::new(err),
                }))),
                Err(err) => Err(err.into()),
            })
            .collect()
    }
}

fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(feature = "mysql")]
fn assign_from_mysql(
    url: &str,
    create_table: bool,
    timeout: Option<Duration>,
    bits: &BitsAllocator,
) -> Result<WorkerAssignment, Failure> {
    let mut assigner = uidgen::MySqlWorkerIdAssigner::new(url)?.create_table(create_table);
    if let Some(timeout) = timeout {
        assigner = assigner.timeout(timeout);
    }
    Ok(assigner.assign_worker_id(bits)?)
}

#[cfg(not(feature = "mysql"))]
fn assign_from_mysql(
    _: &str,
    _: bool,
    _: Option<Duration>,
    _: &BitsAllocator,
) -> Result<WorkerAssignment, Failure> {
    Err(Failure::msg(format!(
        "this uidgen was built without MySQL support: rebuild it with --features mysql, or \
         leave out --mysql-url and unset {MYSQL_URL_ENV} to use the embedded registry"
    )))
}
