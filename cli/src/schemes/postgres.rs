//! Instagram's scheme on PostgreSQL: a PL/pgSQL function that puts together the ms
//! since Instagram's epoch (41 bits), a shard ID (13 bits) and a sequence's next value
//! modulo 1024 (10 bits), as Instagram's engineering blog describes it.

use super::{runtime, set_open, within_limit, Client, Entry, Error, Place, Scheme};

pub(super) fn fill(all: &mut [Entry]) {
    set_open(all, "instagram", open);
}

/// The shard whose IDs the run takes.
const SHARD: i32 = 5;

/// The sequence and the function, made if missing (replaced if there).
const SETUP: &str = r"
CREATE SEQUENCE IF NOT EXISTS uidgen_schemes_instagram_seq;
CREATE OR REPLACE FUNCTION uidgen_schemes_instagram_id(shard_id int, OUT result bigint) AS $$
DECLARE
    our_epoch bigint := 1314220021721;
    seq_id bigint;
    now_millis bigint;
BEGIN
    SELECT nextval('uidgen_schemes_instagram_seq') % 1024 INTO seq_id;
    SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
    result := (now_millis - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | (seq_id);
END;
$$ LANGUAGE PLPGSQL;
";

struct Instagram {
    url: String,
}

fn open(place: &Place<'_>) -> Result<Box<dyn Scheme>, Error> {
    let url = place
        .stores
        .first()
        .ok_or("--store postgres://… is needed")?
        .clone();
    let scheme = Instagram { url };
    let client = scheme.connect()?;
    within_limit(&client.rt, async {
        client
            .client
            .batch_execute(SETUP)
            .await
            .map_err(|e| format!("cannot make the function: {e}"))
    })?;
    Ok(Box::new(scheme))
}

impl Instagram {
    fn connect(&self) -> Result<Connection, Error> {
        let rt = runtime()?;
        let (client, connection) = within_limit(&rt, async {
            tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
                .await
                .map_err(|e| format!("cannot connect to PostgreSQL: {e}"))
        })?;
        // Drives the connection while a query waits (each call blocks on this runtime).
        rt.spawn(connection);
        Ok(Connection { rt, client })
    }
}

impl Scheme for Instagram {
    fn client(&self) -> Result<Box<dyn Client>, Error> {
        let connection = self.connect()?;
        let statement = within_limit(&connection.rt, async {
            connection
                .client
                .prepare("SELECT uidgen_schemes_instagram_id($1)")
                .await
                .map_err(|e| format!("PostgreSQL: {e}"))
        })?;
        Ok(Box::new(Prepared {
            connection,
            statement,
        }))
    }
}

/// The runtime last: fields drop in order, and the client closes on it.
struct Connection {
    client: tokio_postgres::Client,
    rt: tokio::runtime::Runtime,
}

struct Prepared {
    connection: Connection,
    statement: tokio_postgres::Statement,
}

impl Client for Prepared {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error> {
        let Connection { rt, client } = &mut self.connection;
        let statement = &self.statement;
        let row = within_limit(rt, async {
            client
                .query_one(statement, &[&SHARD])
                .await
                .map_err(|e| format!("PostgreSQL: {e}"))
        })?;
        let id: i64 = row.try_get(0).map_err(|e| format!("PostgreSQL: {e}"))?;
        out.push(id as u128);
        Ok(())
    }
}
