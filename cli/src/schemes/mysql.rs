//! The MySQL/MariaDB schemes: auto-increment (an INSERT per ID) and Flickr's ticket
//! server (`REPLACE INTO Tickets64`), each on one server or on two that hand out odd and
//! even IDs (`auto_increment_increment` 2, `auto_increment_offset` 1 and 2), a client
//! taking from the servers in turn.

use super::{runtime, set_open, within_limit, Client, Entry, Error, Place, Scheme};
use mysql_async::prelude::Queryable;

pub(super) fn fill(all: &mut [Entry]) {
    set_open(all, "mysql-auto-increment", |p| {
        open(p, Kind::AutoIncrement, 1)
    });
    set_open(all, "mysql-auto-increment-2", |p| {
        open(p, Kind::AutoIncrement, 2)
    });
    set_open(all, "flickr-ticket", |p| open(p, Kind::Ticket, 1));
    set_open(all, "flickr-ticket-2", |p| open(p, Kind::Ticket, 2));
}

#[derive(Clone, Copy)]
enum Kind {
    AutoIncrement,
    Ticket,
}

impl Kind {
    /// The table, made if missing; the ticket table as Flickr's article has it.
    fn table(self) -> &'static str {
        match self {
            Kind::AutoIncrement => {
                "CREATE TABLE IF NOT EXISTS uidgen_schemes_autoinc (\
                 id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
                 stub CHAR(1) NOT NULL DEFAULT '') ENGINE=InnoDB"
            }
            Kind::Ticket => {
                "CREATE TABLE IF NOT EXISTS Tickets64 (\
                 id BIGINT(20) UNSIGNED NOT NULL AUTO_INCREMENT, \
                 stub CHAR(1) NOT NULL DEFAULT '', \
                 PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=MyISAM"
            }
        }
    }

    /// The statement that makes an ID; the server answers its `LAST_INSERT_ID()` in the
    /// same reply (what `SELECT LAST_INSERT_ID()` reads, without a second round trip).
    fn statement(self) -> &'static str {
        match self {
            Kind::AutoIncrement => "INSERT INTO uidgen_schemes_autoinc (stub) VALUES ('a')",
            Kind::Ticket => "REPLACE INTO Tickets64 (stub) VALUES ('a')",
        }
    }
}

struct Mysql {
    pools: Vec<mysql_async::Opts>,
    kind: Kind,
}

fn open(place: &Place<'_>, kind: Kind, servers: usize) -> Result<Box<dyn Scheme>, Error> {
    if place.stores.len() != servers {
        return Err(format!(
            "this scheme takes {servers} server(s): --store mysql://… {}",
            if servers == 2 {
                "and --second-store mysql://…"
            } else {
                ""
            }
        ));
    }
    let pools = place
        .stores
        .iter()
        .map(|url| {
            mysql_async::Opts::from_url(url)
                .map_err(|e| format!("not a MySQL URL ({}): {e}", super::describe(url)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rt = runtime()?;
    within_limit(&rt, async {
        for opts in &pools {
            let mut conn = mysql_async::Conn::new(opts.clone())
                .await
                .map_err(|e| format!("cannot connect to MySQL: {e}"))?;
            conn.query_drop(kind.table())
                .await
                .map_err(|e| format!("cannot make the table: {e}"))?;
            let _ = conn.disconnect().await;
        }
        Ok::<_, Error>(())
    })?;
    Ok(Box::new(Mysql { pools, kind }))
}

impl Scheme for Mysql {
    fn client(&self) -> Result<Box<dyn Client>, Error> {
        let rt = runtime()?;
        let servers = self.pools.len();
        let conns = within_limit(&rt, async {
            let mut conns = Vec::new();
            for (i, opts) in self.pools.iter().enumerate() {
                let mut conn = mysql_async::Conn::new(opts.clone())
                    .await
                    .map_err(|e| format!("cannot connect to MySQL: {e}"))?;
                // Each server of N hands out the IDs i+1, i+1+N, …: Flickr sets this in
                // each server's configuration; a session setting has the same effect on
                // this connection's inserts.
                conn.query_drop(format!(
                    "SET @@auto_increment_increment = {servers}, @@auto_increment_offset = {}",
                    i + 1
                ))
                .await
                .map_err(|e| format!("MySQL: {e}"))?;
                conns.push(conn);
            }
            Ok::<_, Error>(conns)
        })?;
        Ok(Box::new(Connections {
            rt,
            conns,
            turn: 0,
            kind: self.kind,
        }))
    }
}

/// The runtime last: fields drop in order, and the connections need it to close.
struct Connections {
    conns: Vec<mysql_async::Conn>,
    turn: usize,
    kind: Kind,
    rt: tokio::runtime::Runtime,
}

impl Client for Connections {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error> {
        self.turn = (self.turn + 1) % self.conns.len();
        let conn = &mut self.conns[self.turn];
        let statement = self.kind.statement();
        let id = within_limit(&self.rt, async {
            conn.query_drop(statement)
                .await
                .map_err(|e| format!("MySQL: {e}"))?;
            conn.last_insert_id()
                .ok_or_else(|| "MySQL answered no LAST_INSERT_ID()".to_owned())
        })?;
        out.push(u128::from(id));
        Ok(())
    }
}
