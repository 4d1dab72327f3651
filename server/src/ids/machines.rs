//! Machine IDs for clients that make snowflake IDs themselves (CosId's proxy protocol):
//! each is a uidgen worker lease in a lease table (key prefix) of its namespace's own, so
//! the store's lease steps, time marks, data-loss checks and the region's worker-ID range
//! apply to them as to the service's own worker ID.
//!
//! A remote holder's last tick is not known here. A grant and each guard raise its mark to
//! that moment, and a revert sets it to the moment the holder said it stopped. A successor
//! takes the machine ID only once the lease has run out or been given back, and is told to
//! start above the mark and the clock: above anything the last holder made, as long as it
//! stopped when its lease ran out (CosId's clients do not; the one in
//! server/tests/cosid-protocol-client does).
//!
//! An instance holds one machine ID, but two requests of one instance that race (a client
//! retrying a slow request on another server) can leave it holding two. So every guard
//! renews, and every revert gives back, all of an instance's machine IDs: none of them
//! lapses while the instance lives, whichever one it uses.

use super::{read, write, Ids};
use crate::error::{shown_tag, ApiError};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use uidgen::{Acquired, LeaseRecord, LeaseRequest, LeaseStore, StoreError};

/// The most namespaces one service keeps machine IDs for (each holds its store).
pub const MAX_NAMESPACES: usize = 1024;
/// The most instances whose last machine ID one service remembers (to answer `M-03`
/// rather than `M-02`); past it, a lost machine ID is answered `M-02`.
const MAX_REMEMBERED: usize = 100_000;
/// The longest namespace and instance ID, in bytes.
pub const MAX_NAME_LEN: usize = 128;
/// The widest machine ID: CosId's `machineId` is a Java `int`.
pub const MAX_MACHINE_BITS: u32 = 31;
/// The shortest and longest `safeGuardDuration`.
pub const MIN_GUARD: Duration = Duration::from_secs(1);
pub const MAX_GUARD: Duration = Duration::from_secs(24 * 3600);

/// A machine ID and the time its holder starts above (Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MachineState {
    pub(crate) machine_id: u64,
    pub(crate) last_time_stamp: u64,
}

/// Why a machine ID call failed, with CosId's code where CosId has one.
#[derive(Debug)]
pub(crate) enum MachineError {
    /// `M-01`: every machine ID the request allows is held.
    Exhausted(String),
    /// `M-02`: this instance holds no machine ID in the namespace.
    NoState(String),
    /// `M-03`: this instance held one, and another holds it now.
    Lost(String),
    /// Anything else: the request, or the store.
    Api(ApiError),
}

impl From<ApiError> for MachineError {
    fn from(e: ApiError) -> Self {
        MachineError::Api(e)
    }
}

/// What a machine-ID request asks for, checked.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    pub(crate) namespace: String,
    pub(crate) instance_id: String,
    pub(crate) stable: bool,
}

impl Instance {
    fn holder(&self) -> String {
        format!("cosid:{}", self.instance_id)
    }

    fn key(&self) -> (String, String) {
        (self.namespace.clone(), self.instance_id.clone())
    }
}

/// The namespaces' lease stores, and which machine ID each instance was last given here
/// (to tell a lost machine ID, `M-03`, from none at all, `M-02`).
#[derive(Default)]
pub(crate) struct Machines {
    stores: std::sync::RwLock<HashMap<String, Namespace>>,
    granted: std::sync::Mutex<HashMap<(String, String), u64>>,
}

impl std::fmt::Debug for Machines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machines")
            .field("namespaces", &read(&self.stores).len())
            .finish()
    }
}

/// The lease table (or key prefix) of a namespace: `cosid_` and the namespace in lower
/// case letters, digits and `_`, with a hash of the namespace as given when that changed
/// it, so two namespaces share a table only if their hashes meet (and sharing a table
/// only makes them share machine IDs, which repeats nothing).
pub(crate) fn namespace_table(namespace: &str) -> String {
    let plain: String = namespace
        .chars()
        .take(32)
        .map(|c| match c {
            'a'..='z' | '0'..='9' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect();
    if plain == namespace {
        format!("cosid_{plain}")
    } else {
        format!("cosid_{plain}_{:016x}", fnv1a(namespace.as_bytes()))
    }
}

/// FNV-1a, 64 bits: a hash that stays the same across builds and Rust versions (std's
/// `DefaultHasher` may change), since table names must.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A namespace or an instance ID as the routes take them: 1 to [`MAX_NAME_LEN`] bytes,
/// no control characters.
pub(crate) fn check_name(what: &str, value: &str) -> Result<(), ApiError> {
    if value.is_empty() || value.len() > MAX_NAME_LEN || value.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            format!("the {what} {} cannot be used", shown_tag(value)),
            format!("1 to {MAX_NAME_LEN} bytes, no control characters"),
        ));
    }
    Ok(())
}

/// A namespace's lease store, and the lock its grants take in this process (so that two
/// requests of one instance here get one machine ID).
#[derive(Clone)]
struct Namespace {
    store: Arc<dyn LeaseStore>,
    granting: Arc<std::sync::Mutex<()>>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn store_failed(e: &StoreError) -> MachineError {
    MachineError::Api(ApiError::unavailable(format!("the store failed: {e}")))
}

impl Ids {
    /// The namespace's lease store, opened on first use.
    fn machine_store(&self, namespace: &str) -> Result<Namespace, MachineError> {
        if let Some(open) = read(&self.machines.stores).get(namespace) {
            return Ok(open.clone());
        }
        let mut stores = write(&self.machines.stores);
        if let Some(open) = stores.get(namespace) {
            return Ok(open.clone());
        }
        if stores.len() >= MAX_NAMESPACES {
            return Err(ApiError::unavailable(format!(
                "this service keeps machine IDs of {MAX_NAMESPACES} namespaces already, its limit"
            ))
            .into());
        }
        let store: Arc<dyn LeaseStore> = Arc::from(
            self.lease_url
                .lease_store_in(&namespace_table(namespace))
                .map_err(|e| store_failed(&e))?,
        );
        let open = Namespace {
            store,
            granting: Arc::default(),
        };
        stores.insert(namespace.to_owned(), open.clone());
        Ok(open)
    }

    /// The machine IDs a request may take: the region's range (`worker_ids`) within
    /// what `machine_bits` hold.
    fn machine_ids(&self, machine_bits: u32) -> Result<(u64, u64), MachineError> {
        let widest = (1u64 << machine_bits) - 1;
        let (first, last) = match self.config.worker_id_range() {
            Ok(Some(range)) => (range.first(), range.last().min(widest)),
            _ => (0, widest),
        };
        if first > last {
            return Err(MachineError::Exhausted(format!(
                "machineBit={machine_bits} holds machine IDs up to {widest}, all below this \
                 region's worker IDs (worker_ids starts at {first})"
            )));
        }
        Ok((first, last))
    }

    /// This instance's lease records in the namespace, live or expired, lowest first.
    fn own_records(
        store: &dyn LeaseStore,
        instance: &Instance,
    ) -> Result<Vec<LeaseRecord>, MachineError> {
        let holder = instance.holder();
        Ok(store
            .leases()
            .map_err(|e| store_failed(&e))?
            .into_iter()
            .filter(|record| record.holder.as_deref() == Some(holder.as_str()))
            .collect())
    }

    /// CosId's `distribute`: the machine ID this instance holds, else the one it held
    /// last if it is free, else the lowest free one, leased for `guard`. Blocks (store
    /// calls).
    pub(crate) fn distribute(
        &self,
        instance: &Instance,
        machine_bits: u32,
        guard: Duration,
    ) -> Result<MachineState, MachineError> {
        let namespace = self.machine_store(&instance.namespace)?;
        let _one = namespace.granting.lock().unwrap_or_else(|p| p.into_inner());
        let store = &*namespace.store;
        let (first, last) = self.machine_ids(machine_bits)?;
        let holder = instance.holder();
        let own = Self::own_records(store, instance)?
            .into_iter()
            .find(|record| (first..=last).contains(&record.worker_id));
        let mut request = LeaseRequest::new(&holder, guard, last);
        request.min_worker_id = first;
        let mut granted = None;
        if let Some(own) = &own {
            request.worker_id = Some(own.worker_id);
            if let Acquired::Granted { worker_id, .. } =
                store.acquire(&request).map_err(|e| store_failed(&e))?
            {
                granted = Some(worker_id);
            }
            request.worker_id = None;
        }
        let (machine_id, mark_ms) = match granted {
            // Its own machine ID again: the instance starts over, so its earlier IDs are
            // all behind the clock.
            Some(worker_id) => (worker_id, 0),
            None => match store.acquire(&request).map_err(|e| store_failed(&e))? {
                Acquired::Granted { worker_id, mark_ms } => (worker_id, mark_ms),
                Acquired::Exhausted | Acquired::Held { .. } => {
                    return Err(MachineError::Exhausted(format!(
                        "every machine ID from {first} to {last} of namespace {} is held",
                        shown_tag(&instance.namespace)
                    )))
                }
                _ => {
                    return Err(
                        ApiError::unavailable("the store answered an unknown outcome").into(),
                    )
                }
            },
        };
        let now = now_ms();
        if !store
            .renew(machine_id, &holder, guard, now)
            .map_err(|e| store_failed(&e))?
        {
            return Err(MachineError::Lost(format!(
                "machine ID {machine_id} was taken by another instance as it was granted"
            )));
        }
        let mut granted = self
            .machines
            .granted
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if granted.len() < MAX_REMEMBERED || granted.contains_key(&instance.key()) {
            granted.insert(instance.key(), machine_id);
        }
        Ok(MachineState {
            machine_id,
            last_time_stamp: mark_ms.max(now),
        })
    }

    /// CosId's `guard`: the instance is alive; its leases run `guard` from now, and their
    /// marks come up to now. Blocks (store calls).
    pub(crate) fn guard(&self, instance: &Instance, guard: Duration) -> Result<(), MachineError> {
        let namespace = self.machine_store(&instance.namespace)?;
        let own = Self::own_records(&*namespace.store, instance)?;
        if own.is_empty() {
            return Err(self.missing(instance));
        }
        let now = now_ms();
        let mut renewed = false;
        for record in &own {
            renewed |= namespace
                .store
                .renew(record.worker_id, &instance.holder(), guard, now)
                .map_err(|e| store_failed(&e))?;
        }
        if renewed {
            Ok(())
        } else {
            Err(self.missing(instance))
        }
    }

    /// M-03 if this service gave the instance a machine ID it no longer holds, else M-02.
    fn missing(&self, instance: &Instance) -> MachineError {
        let had = self
            .machines
            .granted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&instance.key())
            .copied();
        let who = format!(
            "instance {} of namespace {}",
            shown_tag(&instance.instance_id),
            shown_tag(&instance.namespace)
        );
        match had {
            Some(machine_id) => MachineError::Lost(format!(
                "{who} no longer holds machine ID {machine_id}: its lease ran out and another \
                 instance took it; distribute a new one"
            )),
            None => MachineError::NoState(format!("{who} holds no machine ID: distribute one")),
        }
    }

    /// CosId's `revert`: gives the machine ID back, its mark at now (the instance has
    /// stopped). A stable instance keeps it for one more guard duration, so that it gets
    /// it back when it returns in time. Idempotent. Blocks (store calls).
    pub(crate) fn revert(&self, instance: &Instance, guard: Duration) -> Result<(), MachineError> {
        let namespace = self.machine_store(&instance.namespace)?;
        let holder = instance.holder();
        for own in Self::own_records(&*namespace.store, instance)? {
            let kept = if instance.stable {
                namespace
                    .store
                    .renew(own.worker_id, &holder, guard, now_ms())
            } else {
                namespace.store.release(own.worker_id, &holder, now_ms())
            };
            kept.map_err(|e| store_failed(&e))?;
        }
        if !instance.stable {
            self.machines
                .granted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&instance.key());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_map_to_table_names_every_store_takes_and_apart() {
        assert_eq!(namespace_table("orders"), "cosid_orders");
        let mixed = namespace_table("Order-Service");
        assert!(mixed.starts_with("cosid_order_service_"), "{mixed}");
        assert_ne!(namespace_table("a-b"), namespace_table("a_b"));
        assert_ne!(namespace_table("App"), namespace_table("app"));
        let long = namespace_table(&"x".repeat(MAX_NAME_LEN));
        assert!(long.len() <= 64, "{long}");
        for name in [
            "orders",
            "Order-Service",
            "é",
            "a b",
            &"y".repeat(MAX_NAME_LEN),
        ] {
            let table = namespace_table(name);
            assert!(
                table.len() <= 64 && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name} → {table}"
            );
        }
        // The hash is fixed across builds: a table once named keeps its name.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn names_are_refused_naming_the_limit() {
        assert!(check_name("namespace", "orders").is_ok());
        for bad in ["", "a\nb", &"n".repeat(MAX_NAME_LEN + 1)] {
            let err = check_name("namespace", bad).unwrap_err();
            assert_eq!(err.status, axum::http::StatusCode::BAD_REQUEST);
            assert!(err.limit.unwrap().contains("128 bytes"));
        }
    }
}
