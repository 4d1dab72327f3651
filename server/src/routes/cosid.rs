//! CosId's proxy routes, so CosId's clients (`cosid.proxy.host`) take machine IDs and
//! segments from uidgen unchanged: machine IDs are worker leases of the namespace (see
//! `ids/machines.rs`), segments are tags `{namespace}.{name}` of the segment store, and
//! `/ids` hands out the service's own IDs.
//!
//! Failures answer CosId's body, `{"code","msg","errors"}`: 400 with `M-01` (machine IDs
//! used up), `M-02` (no machine ID for the instance) or `M-03` (machine ID lost), as
//! CosId's proxy answers them; otherwise the status says what happened and `code` repeats
//! it.

use super::{authorize, text, Asks, Params};
use crate::error::{shown_tag, ApiError};
use crate::ids::machines::{
    check_name, Instance, MachineError, MAX_GUARD, MAX_MACHINE_BITS, MIN_GUARD,
};
use crate::ids::Ids;
use crate::metrics::Route;
use crate::tokens::{MACHINES_GRANT, SNOWFLAKE_GRANT};
use axum::extract::{Path, RawQuery, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use utoipa::ToSchema;

/// CosId's error body.
#[derive(Serialize, ToSchema)]
#[schema(as = CosIdError)]
struct ErrorBody {
    /// `M-01`, `M-02`, `M-03`, or the HTTP status.
    code: String,
    /// What went wrong, and the limit where there is one.
    msg: String,
    /// Always empty (CosId lists its field errors here).
    errors: Vec<String>,
}

fn error(status: StatusCode, code: &str, msg: String) -> Response {
    let body = ErrorBody {
        code: code.to_owned(),
        msg,
        errors: Vec::new(),
    };
    super::json(status, serde_json::to_string(&body).unwrap_or_default())
}

fn refused(e: ApiError) -> Response {
    let msg = match &e.limit {
        Some(limit) => format!("{} (allowed: {limit})", e.error),
        None => e.error.clone(),
    };
    error(e.status, e.status.as_str(), msg)
}

fn machine_refused(e: MachineError) -> Response {
    match e {
        MachineError::Exhausted(msg) => error(StatusCode::BAD_REQUEST, "M-01", msg),
        MachineError::NoState(msg) => error(StatusCode::BAD_REQUEST, "M-02", msg),
        MachineError::Lost(msg) => error(StatusCode::BAD_REQUEST, "M-03", msg),
        MachineError::Api(e) => refused(e),
    }
}

/// The refusals every CosId route can give, in CosId's body.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // Only its description is used: the routes answer with `error`.
enum Refused {
    /// The service has tokens and the request sent none it knows.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// The token is not granted what the route needs: `@machines` (machine IDs), the
    /// segment's tag `namespace.name`, `@snowflake` (`/ids`) or the tag (`/ids/{name}`).
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// The request took longer than the service's request timeout.
    #[response(status = 408)]
    Timeout(ErrorBody),
    /// The store failed, or no ID can be made now.
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// `{"machineId":…,"lastTimeStamp":…}`, CosId's `MachineState`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = CosIdMachineState)]
struct MachineBody {
    /// The machine ID, the instance's until it stops guarding it.
    machine_id: u64,
    /// Unix milliseconds the instance's IDs must start above.
    last_time_stamp: u64,
}

/// A parameter CosId requires.
fn required<'a>(params: &'a Params, name: &str, form: &str) -> Result<&'a str, ApiError> {
    params.get(name).ok_or_else(|| {
        ApiError::bad_request(format!("the {name} parameter is missing"), form.to_owned())
    })
}

/// `stable=true|false` (false when absent, as CosId's client sends it always).
fn stable(params: &Params) -> Result<bool, ApiError> {
    match params.get("stable") {
        None => Ok(false),
        Some(raw) if raw.eq_ignore_ascii_case("true") => Ok(true),
        Some(raw) if raw.eq_ignore_ascii_case("false") => Ok(false),
        Some(raw) => Err(ApiError::bad_request(
            format!("stable = {} is not a boolean", shown_tag(raw)),
            "true or false",
        )),
    }
}

/// `safeGuardDuration`: an ISO-8601 duration as Java writes one (`PT5M`, `PT0.5S`);
/// CosId's default, five minutes, when absent.
fn guard_duration(params: &Params) -> Result<Duration, ApiError> {
    let Some(raw) = params.get("safeGuardDuration") else {
        return Ok(Duration::from_secs(300));
    };
    let limit = || {
        format!(
            "an ISO-8601 duration of days, hours, minutes and seconds (PT5M, PT30S), from \
             {} s to {} h",
            MIN_GUARD.as_secs(),
            MAX_GUARD.as_secs() / 3600
        )
    };
    let shown = shown_tag(raw);
    if raw.trim().len() > 40 && raw.trim().starts_with("PT") {
        // CosId's client sends Long.MAX_VALUE ms when its guarder is off.
        return Err(ApiError::bad_request(
            format!("safeGuardDuration = {shown} never ends: a machine ID here is a lease"),
            "turn CosId's machine guarder on (cosid.machine.guarder.enabled), with a \
             safeGuardDuration from 1 s to 24 h",
        ));
    }
    if !java_duration_shape(raw.trim()) {
        return Err(ApiError::bad_request(
            format!("safeGuardDuration = {shown} is not a duration"),
            limit(),
        ));
    }
    let parsed = iso8601::duration(raw.trim()).map_err(|_| {
        ApiError::bad_request(
            format!("safeGuardDuration = {shown} is not a duration"),
            limit(),
        )
    })?;
    let duration = match parsed {
        // Years and months have no fixed length (Java's Duration refuses them too).
        iso8601::Duration::YMDHMS {
            year: 0, month: 0, ..
        } => Duration::from(parsed),
        _ => {
            return Err(ApiError::bad_request(
                format!("safeGuardDuration = {shown} counts years, months or weeks"),
                limit(),
            ))
        }
    };
    if !(MIN_GUARD..=MAX_GUARD).contains(&duration) {
        return Err(ApiError::bad_request(
            format!("safeGuardDuration = {shown} is out of range"),
            limit(),
        ));
    }
    Ok(duration)
}

/// Whether `text` has the whole shape of a duration as Java's `Duration` writes one,
/// `P[nD][T[nH][nM][n[.n]S]]` with at least one part: the parser reads a valid prefix and
/// would take `PT5Mgarbage` for five minutes.
fn java_duration_shape(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('P') else {
        return false;
    };
    let (days, time) = match rest.split_once('T') {
        Some((days, time)) => (days, Some(time)),
        None => (rest, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let days_ok = days.is_empty() || days.strip_suffix('D').is_some_and(digits);
    let mut parts = 0;
    let time_ok = match time {
        None => true,
        Some(mut time) => {
            for unit in ['H', 'M'] {
                if let Some(at) = time.find(unit) {
                    if !digits(&time[..at]) {
                        return false;
                    }
                    time = &time[at + 1..];
                    parts += 1;
                }
            }
            if let Some(seconds) = time.strip_suffix('S') {
                let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, "0"));
                parts += 1;
                digits(whole) && digits(fraction)
            } else {
                time.is_empty() && parts > 0
            }
        }
    };
    days_ok && time_ok && (!days.is_empty() || parts > 0)
}

fn machine_bits(params: &Params) -> Result<u32, ApiError> {
    let raw = required(params, "machineBit", "machineBit=<1 to 31>")?;
    let limit = format!("a whole number from 1 to {MAX_MACHINE_BITS}");
    match raw.trim().parse::<u32>() {
        Ok(bits) if (1..=MAX_MACHINE_BITS).contains(&bits) => Ok(bits),
        Ok(_) => Err(ApiError::bad_request(
            format!("machineBit = {} is out of range", shown_tag(raw)),
            limit,
        )),
        Err(_) => Err(ApiError::bad_request(
            format!("machineBit = {} is not a number", shown_tag(raw)),
            limit,
        )),
    }
}

fn instance(namespace: String, params: &Params) -> Result<Instance, ApiError> {
    check_name("namespace", &namespace)?;
    let instance_id = required(params, "instanceId", "instanceId=<host:port or a name>")?;
    check_name("instanceId", instance_id)?;
    Ok(Instance {
        namespace,
        instance_id: instance_id.to_owned(),
        stable: stable(params)?,
    })
}

/// Runs a machine-ID call (store calls) on a blocking thread.
async fn blocking<T: Send + 'static>(
    ids: &Arc<Ids>,
    call: impl FnOnce(&Ids) -> Result<T, MachineError> + Send + 'static,
) -> Result<T, MachineError> {
    let ids = Arc::clone(ids);
    tokio::task::spawn_blocking(move || call(&ids))
        .await
        .map_err(|_| MachineError::Api(ApiError::unavailable("the store call panicked")))?
}

/// `POST /machines/{namespace}`: a machine ID for the instance (CosId's `distribute`).
#[utoipa::path(
    post,
    path = "/machines/{namespace}",
    tag = "cosid",
    summary = "CosId: a machine ID for an instance, leased until it stops guarding it",
    params(
        ("namespace" = String, Path, description = "CosId's namespace: machine IDs are \
                                                     unique within it", example = "orders"),
        ("machineBit" = u32, Query, minimum = 1, maximum = 31,
         description = "The client's machine bits: machine IDs below 2^machineBit"),
        ("instanceId" = String, Query, description = "The instance (CosId: host:port)",
         example = "10.0.0.7:8080"),
        ("stable" = Option<bool>, Query, description = "A stable identity (a StatefulSet \
                                                        pod): it gets its machine ID back"),
        ("safeGuardDuration" = Option<String>, Query,
         description = "How long the machine ID stays the instance's without a guard, as \
                        ISO-8601 (PT5M when absent), 1 s to 24 h", example = "PT5M"),
    ),
    responses(
        (status = 200, description = "The machine ID and the time to start above",
         body = MachineBody),
        (status = 400, description = "M-01: every machine ID is held; or a parameter \
                                      cannot be used", body = ErrorBody),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn distribute(
    ids: State<Arc<Ids>>,
    namespace: Path<String>,
    asks: Asks,
    query: RawQuery,
) -> Response {
    machines(Method::POST, ids, namespace, asks, query).await
}

/// `PATCH /machines/{namespace}`: the instance is alive (CosId's `guard`).
#[utoipa::path(
    patch,
    path = "/machines/{namespace}",
    tag = "cosid",
    summary = "CosId: the instance is alive; its machine ID stays its own for \
               safeGuardDuration more",
    params(
        ("namespace" = String, Path, description = "CosId's namespace", example = "orders"),
        ("instanceId" = String, Query, description = "The instance", example = "10.0.0.7:8080"),
        ("stable" = Option<bool>, Query, description = "A stable identity"),
        ("safeGuardDuration" = Option<String>, Query,
         description = "ISO-8601, PT5M when absent, 1 s to 24 h", example = "PT5M"),
    ),
    responses(
        (status = 200, description = "Guarded (no body)"),
        (status = 400, description = "M-02: the instance holds no machine ID; M-03: it \
                                      held one another instance holds now; or a parameter \
                                      cannot be used", body = ErrorBody),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn guard(
    ids: State<Arc<Ids>>,
    namespace: Path<String>,
    asks: Asks,
    query: RawQuery,
) -> Response {
    machines(Method::PATCH, ids, namespace, asks, query).await
}

/// `DELETE /machines/{namespace}`: the instance gives its machine ID back (CosId's
/// `revert`); nothing to give back is not an error.
#[utoipa::path(
    delete,
    path = "/machines/{namespace}",
    tag = "cosid",
    summary = "CosId: the instance stops and gives its machine ID back",
    params(
        ("namespace" = String, Path, description = "CosId's namespace", example = "orders"),
        ("instanceId" = String, Query, description = "The instance", example = "10.0.0.7:8080"),
        ("stable" = Option<bool>, Query, description = "A stable identity: the machine ID \
                                                        stays its for safeGuardDuration"),
        ("safeGuardDuration" = Option<String>, Query,
         description = "ISO-8601, PT5M when absent, 1 s to 24 h", example = "PT5M"),
    ),
    responses(
        (status = 200, description = "Given back, or there was nothing to give back (no body)"),
        (status = 400, description = "A parameter cannot be used", body = ErrorBody),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn revert(
    ids: State<Arc<Ids>>,
    namespace: Path<String>,
    asks: Asks,
    query: RawQuery,
) -> Response {
    machines(Method::DELETE, ids, namespace, asks, query).await
}

async fn machines(
    method: Method,
    State(ids): State<Arc<Ids>>,
    Path(namespace): Path<String>,
    asks: Asks,
    RawQuery(query): RawQuery,
) -> Response {
    let checked = (|| {
        authorize(&ids, asks.bearer(), MACHINES_GRANT)?;
        let params = Params::from_parts(query.as_deref(), b"")?;
        let instance = instance(namespace, &params)?;
        let guard = guard_duration(&params)?;
        let bits = if method == Method::POST {
            machine_bits(&params)?
        } else {
            0
        };
        Ok::<_, ApiError>((instance, guard, bits))
    })();
    let (instance, guard, bits) = match checked {
        Ok(checked) => checked,
        Err(e) => return refused(e),
    };
    let done = if method == Method::POST {
        blocking(&ids, move |ids| ids.distribute(&instance, bits, guard))
            .await
            .map(|state| {
                super::json_ok(&MachineBody {
                    machine_id: state.machine_id,
                    last_time_stamp: state.last_time_stamp,
                })
            })
    } else if method == Method::PATCH {
        blocking(&ids, move |ids| ids.guard(&instance, guard))
            .await
            .map(|()| empty())
    } else {
        blocking(&ids, move |ids| ids.revert(&instance, guard))
            .await
            .map(|()| empty())
    };
    done.unwrap_or_else(machine_refused)
}

/// A 200 with no body and no content type, as CosId's `void` routes answer.
fn empty() -> Response {
    Response::new(axum::body::Body::empty())
}

/// A segment's tag: `{namespace}.{name}`, CosId's namespaced name.
fn segment_tag(ids: &Ids, asks: &Asks, namespace: &str, name: &str) -> Result<String, ApiError> {
    let tag = format!("{namespace}.{name}");
    authorize(ids, asks.bearer(), &tag)?;
    Ok(tag)
}

/// A whole number parameter from `min` to `max`.
fn number(params: &Params, name: &str, min: u64, max: u64) -> Result<u64, ApiError> {
    let raw = required(params, name, &format!("{name}=<{min} to {max}>"))?;
    let limit = format!("a whole number from {min} to {max}");
    match raw.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        Ok(_) => Err(ApiError::bad_request(
            format!("{name} = {} is out of range", shown_tag(raw)),
            limit,
        )),
        Err(_) => Err(ApiError::bad_request(
            format!("{name} = {} is not a number", shown_tag(raw)),
            limit,
        )),
    }
}

/// `POST /segments/distributor/{namespace}/{name}?offset=&step=`: creates the segment's
/// tag with its first ID at `offset + 1`, unless it exists (CosId's `createDistributor`).
#[utoipa::path(
    post,
    path = "/segments/distributor/{namespace}/{name}",
    tag = "cosid",
    summary = "CosId: creates a segment (the tag namespace.name), unless it exists",
    params(
        ("namespace" = String, Path, description = "CosId's namespace", example = "orders"),
        ("name" = String, Path, description = "The segment's name", example = "order_no"),
        ("offset" = u64, Query, maximum = 9_000_000_000_000_000_000u64,
         description = "The IDs start above it"),
        ("step" = u64, Query, minimum = 1, maximum = 100000,
         description = "The base step, up to max_count (100,000 unless configured)"),
    ),
    responses(
        (status = 200, description = "Created, or it existed already (no body)"),
        (status = 400, description = "A parameter or the name cannot be used",
         body = ErrorBody),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn create_segment(
    State(ids): State<Arc<Ids>>,
    Path((namespace, name)): Path<(String, String)>,
    asks: Asks,
    RawQuery(query): RawQuery,
) -> Response {
    let created = async {
        let tag = segment_tag(&ids, &asks, &namespace, &name)?;
        let params = Params::from_parts(query.as_deref(), b"")?;
        let offset = number(&params, "offset", 0, MAX_OFFSET)?;
        let step = number(&params, "step", 1, ids.config.max_count)?;
        ids.create_tag(&tag, offset + 1, step).await
    };
    match created.await {
        Ok(()) => empty(),
        Err(e) => refused(e),
    }
}

/// The highest `offset`: far enough below the largest `BIGINT` that a tag created there
/// still has ranges to give.
const MAX_OFFSET: u64 = 9_000_000_000_000_000_000;

/// `PATCH /segments/{namespace}/{name}?step=`: the new maximum of a range of `step` IDs
/// taken for the caller alone, who hands out `(max − step, max]` (CosId's `nextMaxId`).
#[utoipa::path(
    patch,
    path = "/segments/{namespace}/{name}",
    tag = "cosid",
    summary = "CosId: a range of step IDs, answered as its maximum",
    params(
        ("namespace" = String, Path, description = "CosId's namespace", example = "orders"),
        ("name" = String, Path, description = "The segment's name", example = "order_no"),
        ("step" = u64, Query, minimum = 1, maximum = 100000,
         description = "How many IDs, up to max_count (100,000 unless configured)"),
    ),
    responses(
        (status = 200, description = "The range's maximum: the caller owns (max − step, max]",
         content_type = "application/json", body = u64),
        (status = 400, description = "A parameter or the name cannot be used",
         body = ErrorBody),
        (status = 404, description = "No such segment: create it first", body = ErrorBody),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn next_max_id(
    State(ids): State<Arc<Ids>>,
    Path((namespace, name)): Path<(String, String)>,
    asks: Asks,
    RawQuery(query): RawQuery,
) -> Response {
    let taken = async {
        let tag = segment_tag(&ids, &asks, &namespace, &name)?;
        let params = Params::from_parts(query.as_deref(), b"")?;
        let step = number(&params, "step", 1, ids.config.max_count)?;
        let first = ids.range(&tag, step).await?;
        ids.metrics.served(Route::CosIdSegment, &tag, step as usize);
        Ok::<_, ApiError>(first + step - 1)
    };
    match taken.await {
        Ok(max) => super::handed_out(&ids, super::json(StatusCode::OK, max.to_string()), 0),
        Err(e) => refused(e),
    }
}

/// Which of CosId's `/ids` routes.
#[derive(Clone, Copy, Debug)]
pub(super) enum IdsCall {
    /// `/ids`: a snowflake ID, as a JSON number.
    Share,
    /// `/ids/as-string`: a snowflake ID, as text.
    ShareText,
    /// `/ids/{name}`: an ID of the segment tag `name`, as a JSON number.
    Named,
    /// `/ids/as-string/{name}`: the same, as text.
    NamedText,
}

/// CosId's `/ids` routes: one ID of the service's snowflake generator (the "share"
/// generator) or of a segment tag.
pub(super) async fn ids(
    call: IdsCall,
    ids: Arc<Ids>,
    name: Option<String>,
    asks: Asks,
    method: Method,
) -> Response {
    if method == Method::HEAD {
        // Checked as GET would be, and no ID drawn (HEAD is for probes and caches).
        let checked = match &name {
            Some(tag) => match authorize(&ids, asks.bearer(), tag) {
                Ok(()) => ids.servable(tag).await,
                Err(e) => Err(e),
            },
            None => authorize(&ids, asks.bearer(), SNOWFLAKE_GRANT),
        };
        return match (checked, call) {
            (Err(e), _) => refused(e),
            (Ok(()), IdsCall::Share | IdsCall::Named) => super::head(super::JSON),
            (Ok(()), _) => super::head(super::TEXT),
        };
    }
    let drawn = async {
        match (call, &name) {
            (IdsCall::Named | IdsCall::NamedText, Some(tag)) => {
                authorize(&ids, asks.bearer(), tag)?;
                let id = ids.segment_id(tag).await?;
                ids.metrics.served(Route::CosId, tag, 1);
                Ok::<_, ApiError>(id)
            }
            _ => {
                authorize(&ids, asks.bearer(), SNOWFLAKE_GRANT)?;
                let id = ids.snowflake_id().await?;
                ids.metrics.served(Route::CosId, SNOWFLAKE_GRANT, 1);
                Ok(id)
            }
        }
    };
    match drawn.await {
        Ok(id) => {
            let answer = match call {
                IdsCall::Share | IdsCall::Named => super::json(StatusCode::OK, id.to_string()),
                IdsCall::ShareText | IdsCall::NamedText => text(StatusCode::OK, id.to_string()),
            };
            super::handed_out(&ids, answer, 1)
        }
        Err(e) => refused(e),
    }
}

/// `GET /ids`.
#[utoipa::path(
    get,
    path = "/ids",
    tag = "cosid",
    summary = "CosId: a snowflake ID of this service, as a JSON number",
    responses(
        (status = 200, description = "The ID", content_type = "application/json", body = u64),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn share(State(state): State<Arc<Ids>>, method: Method, asks: Asks) -> Response {
    ids(IdsCall::Share, state, None, asks, method).await
}

/// `GET /ids/as-string`.
#[utoipa::path(
    get,
    path = "/ids/as-string",
    tag = "cosid",
    summary = "CosId: a snowflake ID of this service, as decimal text",
    responses(
        (status = 200, description = "The ID", content_type = "text/plain", body = String),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn share_text(
    State(state): State<Arc<Ids>>,
    method: Method,
    asks: Asks,
) -> Response {
    ids(IdsCall::ShareText, state, None, asks, method).await
}

/// `GET /ids/{name}`.
#[utoipa::path(
    get,
    path = "/ids/{name}",
    tag = "cosid",
    summary = "CosId: an ID of a segment tag, as a JSON number",
    params(("name" = String, Path, description = "A tag created in the store",
            example = "order")),
    responses(
        (status = 200, description = "The ID", content_type = "application/json", body = u64),
        (status = 400, description = "The tag cannot be used", body = ErrorBody),
        (status = 404, description = "No such tag in the store", body = ErrorBody),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn named(
    State(state): State<Arc<Ids>>,
    method: Method,
    Path(name): Path<String>,
    asks: Asks,
) -> Response {
    ids(IdsCall::Named, state, Some(name), asks, method).await
}

/// `GET /ids/as-string/{name}`.
#[utoipa::path(
    get,
    path = "/ids/as-string/{name}",
    tag = "cosid",
    summary = "CosId: an ID of a segment tag, as decimal text",
    params(("name" = String, Path, description = "A tag created in the store",
            example = "order")),
    responses(
        (status = 200, description = "The ID", content_type = "text/plain", body = String),
        (status = 400, description = "The tag cannot be used", body = ErrorBody),
        (status = 404, description = "No such tag in the store", body = ErrorBody),
        Refused,
    ),
    security((), ("bearer" = []))
)]
pub(super) async fn named_text(
    State(state): State<Arc<Ids>>,
    method: Method,
    Path(name): Path<String>,
    asks: Asks,
) -> Response {
    ids(IdsCall::NamedText, state, Some(name), asks, method).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(query: &str) -> Params {
        Params::from_parts(Some(query), b"").unwrap()
    }

    #[test]
    fn guard_durations_are_read_as_java_writes_them_and_refused_naming_the_limit() {
        for (given, wanted) in [
            ("PT5M", 300_000),
            ("PT0.5S", 0),
            ("PT1.5S", 1_500),
            ("PT1H30M", 5_400_000),
            ("P1D", 86_400_000),
            ("PT10S", 10_000),
        ] {
            let read = guard_duration(&params(&format!("safeGuardDuration={given}")));
            if wanted == 0 {
                let err = read.unwrap_err();
                assert!(err.limit.unwrap().contains("from 1 s to 24 h"), "{given}");
            } else {
                assert_eq!(read.unwrap(), Duration::from_millis(wanted), "{given}");
            }
        }
        assert_eq!(
            guard_duration(&params("")).unwrap(),
            Duration::from_secs(300)
        );
        for bad in [
            "5m",
            "P1Y",
            "P1M",
            "P2W",
            "PT25H",
            "P2D",
            "",
            "PTxS",
            "PT5Mgarbage",
            "PT5S5M",
            "PT2S,PT5H",
            "PT1H1H",
            "P1DT",
            "PT",
            "P",
            "PT.5S",
        ] {
            let err = guard_duration(&params(&format!("safeGuardDuration={bad}"))).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST, "{bad}");
            assert!(
                err.error.contains("safeGuardDuration"),
                "{bad}: {}",
                err.error
            );
        }
    }

    #[test]
    fn machine_bits_and_booleans_are_checked() {
        assert_eq!(machine_bits(&params("machineBit=10")).unwrap(), 10);
        for bad in ["machineBit=0", "machineBit=32", "machineBit=x", ""] {
            let err = machine_bits(&params(bad)).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST, "{bad}");
        }
        assert!(stable(&params("stable=TRUE")).unwrap());
        assert!(!stable(&params("")).unwrap());
        assert!(stable(&params("stable=yes")).is_err());
    }
}
