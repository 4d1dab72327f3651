//! The store's own records ([`RecordSteps`]) in a `uidgen_store` table, on every SQL
//! engine: a name and a value a row.

use super::{SqlConn, SqlTable, Value};
use crate::store::guard::RecordSteps;
use crate::store::{StoreError, StoreKind};

/// The records in a table: [`SqlTable`] used as [`RecordSteps`].
pub(crate) type SqlRecords<C> = SqlTable<C>;

/// The `uidgen_store` table's DDL for SQLite.
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_RECORDS_SCHEMA: &str =
    include_str!("../../../schema/uidgen_store.sqlite.sql");
/// The `uidgen_store` table's DDL for MySQL and MariaDB.
#[cfg(feature = "mysql")]
pub(crate) const MYSQL_RECORDS_SCHEMA: &str =
    include_str!("../../../schema/uidgen_store.mysql.sql");
/// The `uidgen_store` table's DDL for PostgreSQL.
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_RECORDS_SCHEMA: &str =
    include_str!("../../../schema/uidgen_store.postgres.sql");

/// The table's name on every SQL engine.
pub(crate) const RECORDS_TABLE: &str = "uidgen_store";

/// An SQL engine's connection to the records table, as the guard's records.
pub(crate) fn records_over<C: SqlConn>(conn: C) -> Box<dyn RecordSteps> {
    Box::new(SqlRecords {
        conn,
        table: RECORDS_TABLE.into(),
    })
}

impl<C: SqlConn> SqlRecords<C> {
    fn pairs(
        &self,
        step: &'static str,
        rows: &[Vec<Value>],
    ) -> Result<Vec<(String, String)>, StoreError> {
        let columns = self.columns(step);
        rows.iter()
            .map(|row| {
                Ok((
                    columns.text(row, 0)?.unwrap_or_default(),
                    columns.text(row, 1)?.unwrap_or_default(),
                ))
            })
            .collect()
    }
}

impl<C: SqlConn> RecordSteps for SqlRecords<C> {
    fn describe(&self) -> String {
        SqlTable::describe(self)
    }

    fn kind(&self) -> StoreKind {
        self.conn.kind()
    }

    fn local_file(&self) -> Option<std::path::PathBuf> {
        self.conn.local_file().map(std::path::Path::to_path_buf)
    }

    fn get(&self, names: &[&str]) -> Result<Vec<Option<String>>, StoreError> {
        let step = "reading the store's records";
        let marks = vec!["?"; names.len()].join(", ");
        let sql = format!(
            "SELECT name, value FROM {} WHERE name IN ({marks})",
            self.table
        );
        let params: Vec<Value> = names.iter().map(|name| Value::from(*name)).collect();
        let done = self.conn.exec(step, &sql, &params)?;
        let found = self.pairs(step, &done.rows)?;
        Ok(names
            .iter()
            .map(|name| {
                found
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, value)| value.clone())
            })
            .collect())
    }

    fn all(&self) -> Result<Vec<(String, String)>, StoreError> {
        let step = "listing the store's records";
        let sql = format!("SELECT name, value FROM {}", self.table);
        let done = self.conn.exec(step, &sql, &[])?;
        self.pairs(step, &done.rows)
    }

    fn insert(&self, name: &str, value: &str) -> Result<bool, StoreError> {
        let sql = format!("INSERT INTO {} (name, value) VALUES (?, ?)", self.table);
        let done = self
            .conn
            .exec("writing a store record", &sql, &[name.into(), value.into()])?;
        Ok(!done.duplicate && done.affected == 1)
    }

    fn put(&self, name: &str, value: &str) -> Result<(), StoreError> {
        let update = format!("UPDATE {} SET value = ? WHERE name = ?", self.table);
        // Update, else insert; an insert that finds the row (another writer was faster)
        // updates once more.
        for _ in 0..2 {
            let done = self.conn.exec(
                "writing a store record",
                &update,
                &[value.into(), name.into()],
            )?;
            if done.affected >= 1 || self.insert(name, value)? {
                return Ok(());
            }
        }
        Err(StoreError::Unexpected {
            store: self.conn.kind().name(),
            location: self.conn.location(),
            step: "writing a store record",
            what: format!(
                "the row {name:?} of {} could neither be updated nor inserted",
                self.table
            ),
        })
    }
}
