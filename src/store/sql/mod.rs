//! What the three SQL engines (SQLite, MySQL/MariaDB, PostgreSQL) share: one statement
//! runner per engine ([`SqlConn`]), and the lease and segment steps written once over it
//! in each engine's [`Dialect`]. An engine's folder holds only its connection.

pub(crate) mod lease;
pub(crate) mod records;
pub(crate) mod segment;

use super::{StoreError, StoreKind};

/// A statement parameter or a column value, as the engines exchange them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Text(String),
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Value::Text(text.to_owned())
    }
}

impl From<u64> for Value {
    /// Numbers past `i64::MAX` never reach a statement: callers check their ranges, and
    /// a wrapped value would be refused by the columns' checks, never stored.
    fn from(number: u64) -> Self {
        Value::Int(i64::try_from(number).unwrap_or(i64::MAX))
    }
}

/// What one statement did.
#[derive(Debug, Default)]
pub(crate) struct Done {
    /// The rows it returned (a `SELECT`, or `... RETURNING`).
    pub rows: Vec<Vec<Value>>,
    /// Rows matched by an `UPDATE` (matched, not only changed: a lease renewed twice in
    /// one millisecond still counts), or inserted.
    pub affected: u64,
    /// The insert hit an existing key; nothing was written.
    pub duplicate: bool,
    /// MySQL's `LAST_INSERT_ID(expr)` after the statement, where the engine has it.
    pub last_insert_id: Option<u64>,
}

/// How an engine writes the few things SQL spells differently.
#[derive(Debug)]
pub(crate) struct Dialect {
    /// The server's clock in Unix milliseconds, as an expression.
    pub now_ms: &'static str,
    /// The larger of two values (`GREATEST`, or SQLite's two-argument `MAX`).
    pub greatest: &'static str,
    /// The value of a lease row's `MODIFIED` column now.
    pub modified_now: &'static str,
    /// The value of a `leaf_alloc` row's `update_time` now.
    pub stamp_now: &'static str,
    /// `update_time` in Unix milliseconds, as an expression.
    pub updated_ms: &'static str,
    /// `UPDATE ... RETURNING` works (not on MySQL or MariaDB: they use `LAST_INSERT_ID`).
    pub update_returning: bool,
}

/// One engine's connection: runs one statement at a time, within the engine's bounds,
/// creating its table on first use. Parameters are written `?` in the SQL; an engine
/// that numbers them renumbers.
pub(crate) trait SqlConn: Send + Sync + 'static {
    fn dialect(&self) -> &'static Dialect;
    fn kind(&self) -> StoreKind;
    /// The store as messages call it (`the {name} store ...`).
    fn name(&self) -> &'static str {
        self.kind().name()
    }
    /// The database, without its password.
    fn location(&self) -> String;
    fn exec(&self, step: &'static str, sql: &str, params: &[Value]) -> Result<Done, StoreError>;
    /// The file the database lives in, for an embedded engine.
    fn local_file(&self) -> Option<&std::path::Path> {
        None
    }
}

/// The reader's connection runs this instead of a table's DDL: it creates nothing.
#[cfg(any(feature = "mysql", feature = "postgres"))]
pub(crate) const NO_DDL: &str = "SELECT 1";

/// `SELECT MAX(column), COUNT(column) FROM table` on `conn`, read by
/// [`checked_max`]. Both names were checked to be plain identifiers (`schema.table`
/// allowed), so they are pasted as they are.
#[cfg(any(feature = "mysql", feature = "postgres"))]
pub(crate) fn column_max(
    conn: &dyn SqlConn,
    table: &str,
    column: &str,
) -> Result<Option<u64>, StoreError> {
    let step = "reading the highest ID";
    let sql = format!("SELECT MAX({column}), COUNT({column}) FROM {table}");
    let done = conn.exec(step, &sql, &[])?;
    let row = done.rows.first();
    let max = match row.and_then(|row| row.first()) {
        None | Some(Value::Null) => MaxValue::Null,
        Some(Value::Int(max)) => MaxValue::Int(*max),
        Some(Value::Text(_)) => MaxValue::Other("text"),
    };
    let count = match row.and_then(|row| row.get(1)) {
        Some(Value::Int(count)) => *count,
        _ => 0,
    };
    checked_max(max, count, column, table).map_err(|what| StoreError::Unexpected {
        store: conn.name(),
        location: conn.location(),
        step,
        what,
    })
}

/// A column's maximum as the engine gave it.
pub(crate) enum MaxValue {
    Null,
    Int(i64),
    /// Text, a float, bytes: not an ID column.
    Other(&'static str),
}

/// The highest ID of a column whose `COUNT` is `count`: `None` only for a column with no
/// value. A maximum that is not an integer (a text column sorts `'9'` above
/// `'10'`; a float has lost digits), or that is negative, is an error: a floor read
/// wrong would let new IDs repeat old ones.
pub(crate) fn checked_max(
    max: MaxValue,
    count: i64,
    column: &str,
    table: &str,
) -> Result<Option<u64>, String> {
    let not_ids = |what: &str| {
        format!(
            "MAX({column}) of {table} is {what}: the highest ID must be read from an integer \
             column (BIGINT); give it with --max-id if the IDs are kept otherwise"
        )
    };
    match max {
        MaxValue::Null if count == 0 => Ok(None),
        MaxValue::Null => Err(not_ids("not an integer")),
        MaxValue::Int(max) => u64::try_from(max)
            .map(Some)
            .map_err(|_| not_ids(&format!("{max}, negative"))),
        MaxValue::Other(kind) => Err(not_ids(&format!("a {kind} value"))),
    }
}

/// One table on one engine's connection: the lease steps (`WORKER_LEASE`) or the segment
/// counters (`leaf_alloc`) of a store, by which trait it is used through.
#[derive(Clone)]
pub(crate) struct SqlTable<C> {
    pub conn: C,
    pub table: String,
}

impl<C: SqlConn> std::fmt::Debug for SqlTable<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("store", &self.conn.kind())
            .field("location", &self.conn.location())
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl<C: SqlConn> SqlTable<C> {
    /// The store, for people and errors: `the MySQL store mysql://u@h:3306/db (table t)`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "the {} store {} (table {})",
            self.conn.name(),
            self.conn.location(),
            self.table
        )
    }

    /// Columns of this table's rows, for a step's errors.
    pub(crate) fn columns(&self, step: &'static str) -> Columns<'_> {
        Columns {
            conn: &self.conn,
            table: &self.table,
            step,
        }
    }
}

/// `ddl` (a `CREATE TABLE IF NOT EXISTS {from} (...)`) for table `to` instead.
pub(crate) fn ddl_for(ddl: &str, from: &str, to: &str) -> String {
    ddl.replacen(&format!("EXISTS {from} ("), &format!("EXISTS {to} ("), 1)
}

/// A column read as a number or text, or an error naming the table's DDL.
pub(crate) struct Columns<'a> {
    pub conn: &'a dyn SqlConn,
    pub table: &'a str,
    pub step: &'static str,
}

impl Columns<'_> {
    fn unexpected(&self, index: usize, what: &str) -> StoreError {
        StoreError::Unexpected {
            store: self.conn.kind().name(),
            location: self.conn.location(),
            step: self.step,
            what: format!(
                "column {index} of {} {what}; compare the table with its DDL in schema/",
                self.table
            ),
        }
    }

    fn get<'r>(&self, row: &'r [Value], index: usize) -> Result<&'r Value, StoreError> {
        row.get(index)
            .ok_or_else(|| self.unexpected(index, "is missing"))
    }

    /// A number, `None` for NULL (MySQL may send a computed number as text).
    pub fn int(&self, row: &[Value], index: usize) -> Result<Option<i64>, StoreError> {
        match self.get(row, index)? {
            Value::Null => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            Value::Text(t) => t
                .parse()
                .map(Some)
                .map_err(|_| self.unexpected(index, "is not a number")),
        }
    }

    /// A number that is never NULL or negative.
    pub fn u64(&self, row: &[Value], index: usize) -> Result<u64, StoreError> {
        self.int(row, index)?
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| self.unexpected(index, "is NULL or negative"))
    }

    pub fn text(&self, row: &[Value], index: usize) -> Result<Option<String>, StoreError> {
        match self.get(row, index)? {
            Value::Null => Ok(None),
            Value::Text(t) => Ok(Some(t.clone())),
            Value::Int(_) => Err(self.unexpected(index, "is a number, not text")),
        }
    }
}

/// `ms` as a duration for a statement, capped so `now + ttl` cannot overflow a `BIGINT`.
pub(crate) fn millis(ttl: std::time::Duration) -> Value {
    Value::Int(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 4))
}

/// The public face of a SQL engine's lease or segment store reached by URL: `new`, a
/// bound on each network step, another table, where it is, and `destroy`. One macro, so
/// the engines' faces cannot drift apart. The steps (`$steps`: `SqlLeases` or
/// `SqlSegments`, on connection `$conn`) must be in scope.
#[cfg(any(feature = "mysql", feature = "postgres"))]
macro_rules! url_store_face {
    (
        $(#[$doc:meta])*
        $name:ident: $steps:ident<$conn:ident>, $schema:expr, $table:literal, $store:literal,
        $url:literal, $destroyed:literal
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name {
            steps: $steps<$conn>,
        }

        impl $name {
            #[doc = concat!("The store in the database at `url` (`", $url, "`). Nothing is")]
            /// connected until the first step.
            pub fn new(url: &str) -> Result<Self, $crate::store::StoreError> {
                Ok(Self {
                    steps: $steps {
                        conn: $conn::new(url, $schema, $table)?,
                        table: $table.into(),
                    },
                })
            }

            /// The bound on each network step: resolving the host name, connecting (with
            /// the handshake) and each statement (default 5 s).
            #[must_use]
            pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
                self.steps.conn = self.steps.conn.with_timeout(timeout);
                self
            }

            #[doc = concat!("Use another table of the same shape (default `", $table, "`); created if missing.")]
            pub fn table(mut self, name: &str) -> Result<Self, $crate::store::StoreError> {
                $crate::store::check_table_name($store, name)?;
                self.steps.conn = self.steps.conn.with_table(name);
                self.steps.table = name.to_owned();
                Ok(self)
            }

            /// The database, without its password.
            pub fn location(&self) -> &str {
                self.steps.conn.location_str()
            }

            #[doc = concat!("Drops the table, with every ", $destroyed, " in it. Only for a store no")]
            /// generator will use again (tests, a retired deployment): what it holds is
            /// what keeps new IDs above the old.
            pub fn destroy(&self) -> Result<(), $crate::store::StoreError> {
                $crate::store::sql::lease::drop_table(&self.steps.conn, &self.steps.table)
            }
        }

        impl $crate::store::driver::Builder for $name {
            fn bounded(self, timeout: std::time::Duration) -> Self {
                self.timeout(timeout)
            }
            fn named(self, name: &str) -> Result<Self, $crate::store::StoreError> {
                self.table(name)
            }
        }
    };
}
#[cfg(any(feature = "mysql", feature = "postgres"))]
pub(crate) use url_store_face;

/// The public face of a store in the embedded SQLite file: `new(path)`, the wait for
/// another process holding the file, another table, and the path.
#[cfg(feature = "sqlite")]
macro_rules! file_store_face {
    ($(#[$doc:meta])* $name:ident: $steps:ident, $schema:expr, $table:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name {
            steps: $steps<$crate::store::sqlite::SqliteConn>,
        }

        impl $name {
            /// The store in the SQLite file at `path`.
            pub fn new(path: impl Into<std::path::PathBuf>) -> Self {
                Self {
                    steps: $steps {
                        conn: $crate::store::sqlite::SqliteConn::new(path.into(), $schema, $table),
                        table: $table.into(),
                    },
                }
            }

            /// How long to wait for another process holding the file (default 10 s).
            #[must_use]
            pub fn busy_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.steps.conn = self.steps.conn.busy_timeout(timeout);
                self
            }

            #[doc = concat!("Use another table of the same shape in the file (default `", $table, "`); created if missing.")]
            pub fn table(mut self, name: &str) -> Result<Self, $crate::store::StoreError> {
                $crate::store::check_table_name("SQLite", name)?;
                self.steps.conn = self.steps.conn.with_table(name);
                self.steps.table = name.to_owned();
                Ok(self)
            }

            /// The database file.
            pub fn path(&self) -> &std::path::Path {
                self.steps.conn.path()
            }
        }

        impl $crate::store::driver::Builder for $name {
            fn bounded(self, timeout: std::time::Duration) -> Self {
                self.busy_timeout(timeout)
            }
            fn named(self, name: &str) -> Result<Self, $crate::store::StoreError> {
                self.table(name)
            }
        }
    };
}
#[cfg(feature = "sqlite")]
pub(crate) use file_store_face;
