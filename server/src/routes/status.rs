//! `/status` (one HTML page that refreshes itself: no script, no asset from elsewhere)
//! and `/status.json` (the same data): what an operator on call looks at first.

use super::{bytes, json_ok, Asks};
use crate::error::{ApiError, ErrorBody};
use crate::ids::{Ids, Status};
use crate::tokens::{Access, STATUS_GRANT};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use std::fmt::Write;
use std::sync::Arc;

/// How often the page reloads itself, in seconds.
const REFRESH_SECONDS: u32 = 5;

/// `GET /status`: the status page.
#[utoipa::path(
    get,
    path = "/status",
    tag = "operations",
    summary = "The status page (HTML): store, lease, tags, readiness",
    responses(
        (status = 200, description = "The page; it reloads itself every 5 s",
         content_type = "text/html", body = String),
        (status = 401, description = "The service has tokens and the request sent none it \
         knows (a browser is asked for it: any user name, the token as password)",
         content_type = "application/json", body = ErrorBody),
        (status = 403, description = "The token is not granted `@status` (or `*`)",
         content_type = "application/json", body = ErrorBody),
    ),
    security((), ("bearer" = []), ("basic" = []))
)]
pub(super) async fn page(State(ids): State<Arc<Ids>>, asks: Asks) -> Response {
    if let Some(refused) = refusal(&ids, &asks) {
        return refused;
    }
    let mut page = bytes(
        StatusCode::OK,
        "text/html; charset=utf-8",
        render(&ids.status()).into_bytes(),
    );
    // Nothing but the page and its own style, and never inside another site's frame.
    page.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
        ),
    );
    page
}

/// `GET /status.json`: what the page shows, as JSON.
#[utoipa::path(
    get,
    path = "/status.json",
    tag = "operations",
    summary = "What the status page shows, as JSON",
    responses(
        (status = 200, description = "The service now", body = Status),
        (status = 401, description = "The service has tokens and the request sent none it knows",
         content_type = "application/json", body = ErrorBody),
        (status = 403, description = "The token is not granted `@status` (or `*`)",
         content_type = "application/json", body = ErrorBody),
    ),
    security((), ("bearer" = []), ("basic" = []))
)]
pub(super) async fn json(State(ids): State<Arc<Ids>>, asks: Asks) -> Response {
    if let Some(refused) = refusal(&ids, &asks) {
        return refused;
    }
    json_ok(&ids.status())
}

/// The refusal of a request without a token granted `@status` when the service has
/// tokens. A browser cannot send a bearer token, so Basic credentials are taken too (the
/// token as the password), and a 401 asks the browser for them.
fn refusal(ids: &Ids, asks: &Asks) -> Option<Response> {
    let basic = asks.basic_password();
    let token = asks.bearer().or(basic.as_deref());
    match ids.tokens().access(token, STATUS_GRANT) {
        Access::Open | Access::Granted => None,
        Access::Unknown => {
            ids.token_refused(STATUS_GRANT, "no token, or one this service does not know");
            let mut refused = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "a token granted @status is needed: send `Authorization: Bearer TOKEN`, or \
                 Basic credentials with the token as the password (a browser asks for them)",
            )
            .into_response();
            refused.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"uidgen status\", charset=\"UTF-8\""),
            );
            Some(refused)
        }
        Access::Forbidden => {
            ids.token_refused(STATUS_GRANT, "a token not granted @status");
            Some(
                ApiError::new(
                    StatusCode::FORBIDDEN,
                    "this token may not see the status: grant it @status (or *)",
                )
                .into_response(),
            )
        }
    }
}

impl Asks {
    /// The password of Basic credentials, if the request sent them.
    pub(crate) fn basic_password(&self) -> Option<String> {
        let value = self.authorization.as_ref()?.to_str().ok()?;
        let (scheme, encoded) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return None;
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        text.split_once(':')
            .map(|(_, password)| password.to_owned())
    }
}

/// `text` with the characters HTML gives a meaning escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Unix ms as UTC, to the second.
fn utc(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(
            || format!("{ms} ms"),
            |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        )
}

/// A table row: a heading and a cell whose text is `value`, named `field` (the path of
/// the same value in `/status.json`) so that tests and scrapers can find it.
fn row(out: &mut String, heading: &str, field: &str, value: &str) {
    let _ = write!(
        out,
        "<tr><th>{}</th><td data-field=\"{}\">{}</td></tr>",
        escape(heading),
        escape(field),
        escape(value)
    );
}

/// A cell named `field`.
fn cell(field: &str, value: &str) -> String {
    format!(
        "<td data-field=\"{}\">{}</td>",
        escape(field),
        escape(value)
    )
}

fn seconds(value: f64) -> String {
    format!("{value:.1}")
}

/// The page.
pub(crate) fn render(status: &Status) -> String {
    let mut out = String::with_capacity(8 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <link rel=\"icon\" href=\"data:,\"><title>uidgen status</title><style>{STYLE}</style>\
         </head><body>"
    );
    let (state, class) = if status.ready {
        ("ready", "ok")
    } else {
        ("not ready", "bad")
    };
    let _ = write!(
        out,
        "<h1>uidgen serve <span data-field=\"version\">{}</span> \
         <span class=\"{class}\" data-field=\"ready\">{state}</span></h1>\
         <p>commit <code data-field=\"commit\">{}</code> · up \
         <span data-field=\"uptime_seconds\">{}</span> s · read at {} · reloads every \
         {REFRESH_SECONDS} s · <a href=\"status.json\">as JSON</a></p>",
        escape(status.version),
        escape(status.commit),
        seconds(status.uptime_seconds),
        utc(status.now_ms),
    );

    let store = &status.store;
    out.push_str("<h2>Store</h2><table>");
    row(&mut out, "kind", "store.kind", &store.kind);
    row(&mut out, "where", "store.location", &store.location);
    row(
        &mut out,
        "identity",
        "store.identity",
        store.identity.as_deref().unwrap_or("none yet"),
    );
    if store.answering {
        let _ = write!(
            out,
            "<tr><th>answers</th><td class=\"ok\" data-field=\"store.answering\">yes</td></tr>"
        );
    } else {
        let since = match (store.failing_since_ms, store.failing_for_seconds) {
            (Some(ms), Some(for_s)) => format!(", since {} ({} s)", utc(ms), seconds(for_s)),
            _ => String::new(),
        };
        let _ = write!(
            out,
            "<tr><th>answers</th><td class=\"bad\" data-field=\"store.answering\">\
             no: the store does not answer{}</td></tr>",
            escape(&since)
        );
        row(
            &mut out,
            "error",
            "store.error",
            store.error.as_deref().unwrap_or(""),
        );
    }
    row(
        &mut out,
        "last answer",
        "store.last_answer_seconds_ago",
        &store
            .last_answer_seconds_ago
            .map_or_else(|| "never".to_owned(), |s| format!("{} s ago", seconds(s))),
    );
    row(
        &mut out,
        "last probe took",
        "store.last_latency_ms",
        &format!("{:.2} ms", store.last_latency_ms),
    );
    out.push_str("</table>");

    let snowflake = &status.snowflake;
    out.push_str("<h2>Snowflake IDs</h2><table>");
    row(
        &mut out,
        "worker ID",
        "snowflake.worker_id",
        &snowflake.worker_id.to_string(),
    );
    row(
        &mut out,
        "IDs in the ring",
        "snowflake.ring_ids",
        &snowflake.ring_ids.to_string(),
    );
    row(
        &mut out,
        "ring slots",
        "snowflake.ring_capacity",
        &snowflake.ring_capacity.to_string(),
    );
    row(
        &mut out,
        "time ahead of the clock (s)",
        "snowflake.time_ahead_seconds",
        &format!("{:.3}", snowflake.time_ahead_seconds),
    );
    if let Some(why) = &snowflake.waiting_for_clock {
        row(
            &mut out,
            "waiting for the clock",
            "snowflake.waiting_for_clock",
            why,
        );
    }
    out.push_str("</table>");

    out.push_str("<h2>Worker lease</h2>");
    match &status.lease {
        None => out.push_str("<p>A fixed worker ID: no lease.</p>"),
        Some(lease) => {
            out.push_str("<table>");
            row(
                &mut out,
                "worker ID",
                "lease.worker_id",
                &lease.worker_id.to_string(),
            );
            row(&mut out, "holder", "lease.holder", &lease.holder);
            row(
                &mut out,
                "expires in (s)",
                "lease.expires_in_seconds",
                &seconds(lease.expires_in_seconds),
            );
            row(
                &mut out,
                "time mark",
                "lease.time_mark_ms",
                &lease
                    .time_mark_ms
                    .map_or_else(|| "none: the lease was lost".to_owned(), utc),
            );
            row(
                &mut out,
                "renewals",
                "lease.renewals",
                &lease.renewals.to_string(),
            );
            row(
                &mut out,
                "renewals failed",
                "lease.renewal_failures",
                &lease.renewal_failures.to_string(),
            );
            if let Some(why) = &lease.trouble {
                let _ = write!(
                    out,
                    "<tr><th>trouble</th><td class=\"bad\" data-field=\"lease.trouble\">{}</td></tr>",
                    escape(why)
                );
            }
            out.push_str("</table>");
        }
    }

    out.push_str("<h2>Segment tags</h2>");
    if status.tags.is_empty() {
        out.push_str("<p>No segment tag served yet.</p>");
    } else {
        out.push_str(
            "<table><tr><th>tag</th><th>current range</th><th>used</th><th>next range</th>\
             <th>IDs left</th><th>step</th><th>ranges fetched</th><th>last fetched</th>\
             <th>IDs/s</th><th>runway (s)</th><th>store</th></tr>",
        );
        let range = |r: &Option<crate::ids::RangeStatus>| {
            r.as_ref().map_or_else(
                || "none".to_owned(),
                |r| format!("{}–{}", r.start, r.end.saturating_sub(1)),
            )
        };
        for (i, tag) in status.tags.iter().enumerate() {
            let field = |name: &str| format!("tags.{i}.{name}");
            let _ = write!(
                out,
                "<tr>{}{}{}{}{}{}{}{}{}{}{}</tr>",
                cell(&field("tag"), &tag.tag),
                cell(&field("current"), &range(&tag.current)),
                tag.current.as_ref().map_or_else(
                    || "<td></td>".to_owned(),
                    |r| cell(&field("current.used"), &r.used.to_string())
                ),
                cell(&field("next"), &range(&tag.next)),
                cell(&field("ids_left"), &tag.ids_left.to_string()),
                cell(&field("step"), &tag.step.to_string()),
                cell(&field("ranges_fetched"), &tag.ranges_fetched.to_string()),
                cell(
                    &field("last_fetched_ms"),
                    &tag.last_fetched_ms.map_or_else(|| "never".to_owned(), utc)
                ),
                cell(
                    &field("rate_per_second"),
                    &format!("{:.1}", tag.rate_per_second)
                ),
                cell(
                    &field("runway_seconds"),
                    &tag.runway_seconds
                        .map_or_else(|| "not measured".to_owned(), seconds)
                ),
                cell(
                    &field("store_error"),
                    tag.store_error.as_deref().unwrap_or("ok")
                ),
            );
        }
        out.push_str("</table>");
    }

    out.push_str("<h2>Readiness (<code>/readyz</code>)</h2><table>");
    for (i, source) in status.sources.iter().enumerate() {
        let class = match source.serving {
            Some(true) => "ok",
            Some(false) => "bad",
            None => "",
        };
        let _ = write!(
            out,
            "<tr><th data-field=\"sources.{i}.source\">{}</th>\
             <td class=\"{class}\" data-field=\"sources.{i}.says\">{}</td></tr>",
            escape(&source.source),
            escape(&source.says)
        );
    }
    out.push_str("</table>");
    if let Some(loss) = &status.data_loss {
        let _ = write!(
            out,
            "<p class=\"bad\" data-field=\"data_loss\">Data loss found: {}</p>",
            escape(loss)
        );
    }
    out.push_str("</body></html>\n");
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#1d1d1f}\
table{border-collapse:collapse;margin-bottom:1.2em}\
th,td{border:1px solid #d0d0d0;padding:.25em .6em;text-align:left;vertical-align:top}\
th{background:#f4f4f4;font-weight:600}td{font-variant-numeric:tabular-nums}\
.ok{color:#1b6e20}.bad{color:#b00020;font-weight:600}h2{margin-bottom:.3em}";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{
        LeaseStatus, RangeStatus, SnowflakeStatus, SourceStatus, StoreStatus, TagStatus,
    };

    fn status(tag: &str, answering: bool) -> Status {
        Status {
            version: "1.2.3",
            commit: "abc<def>",
            now_ms: 1_800_000_000_000,
            uptime_seconds: 12.5,
            ready: answering,
            store: StoreStatus {
                kind: "mysql".into(),
                location: "mysql://127.0.0.1:3306/test".into(),
                identity: Some("00ff 1700000000000".into()),
                answering,
                last_answer_seconds_ago: Some(0.4),
                last_latency_ms: 1.25,
                failing_for_seconds: (!answering).then_some(7.0),
                failing_since_ms: (!answering).then_some(1_799_999_993_000),
                error: (!answering).then(|| "connection refused <eof>".into()),
            },
            snowflake: SnowflakeStatus {
                worker_id: 7,
                ring_ids: 100,
                ring_capacity: 128,
                time_ahead_seconds: 0.0,
                waiting_for_clock: None,
            },
            lease: Some(LeaseStatus {
                worker_id: 7,
                holder: "host pid 1".into(),
                expires_in_seconds: 40.0,
                time_mark_ms: Some(1_800_000_001_000),
                renewals: 3,
                renewal_failures: 0,
                trouble: None,
            }),
            tags: vec![TagStatus {
                tag: tag.into(),
                current: Some(RangeStatus {
                    start: 1001,
                    end: 2001,
                    used: 150,
                    size: 1000,
                }),
                next: None,
                ranges_held: 1,
                ids_left: 850,
                step: 1000,
                ranges_fetched: 2,
                last_fetched_ms: Some(1_799_999_990_000),
                rate_per_second: 3.0,
                runway_seconds: None,
                store_error: None,
            }],
            sources: vec![SourceStatus {
                source: format!("tag {tag}"),
                serving: Some(true),
                says: "ok (850 IDs fetched)".into(),
            }],
            data_loss: None,
        }
    }

    #[test]
    fn a_hostile_tag_or_error_is_text_on_the_page_never_markup() {
        let page = render(&status("<script>alert(1)</script>\"x'", false));
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;x&#39;"));
        assert!(page.contains("connection refused &lt;eof&gt;"));
        assert!(page.contains("abc&lt;def&gt;"));
    }

    #[test]
    fn the_page_names_each_value_and_says_when_the_store_stopped() {
        let page = render(&status("order", true));
        for shown in [
            "<td data-field=\"tags.0.current\">1001–2000</td>",
            "<td data-field=\"tags.0.current.used\">150</td>",
            "<td data-field=\"tags.0.next\">none</td>",
            "<td data-field=\"lease.time_mark_ms\">2027-01-15 08:00:01 UTC</td>",
            "<td class=\"ok\" data-field=\"store.answering\">yes</td>",
            "<meta http-equiv=\"refresh\" content=\"5\">",
            "<link rel=\"icon\" href=\"data:,\">",
        ] {
            assert!(page.contains(shown), "no {shown} in {page}");
        }
        assert!(!page.contains("src="), "nothing fetched: {page}");
        let cut = render(&status("order", false));
        assert!(
            cut.contains("no: the store does not answer, since 2027-01-15 07:59:53 UTC (7.0 s)"),
            "{cut}"
        );
        assert!(cut.contains("class=\"bad\" data-field=\"ready\">not ready"));
    }

    #[test]
    fn basic_credentials_give_their_password_and_nothing_else_does() {
        let asks = |value: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            Asks::from_headers(&headers)
        };
        // "ops:tok:en" in base64: a password may hold a colon.
        assert_eq!(
            asks("Basic b3BzOnRvazplbg==").basic_password().as_deref(),
            Some("tok:en")
        );
        assert_eq!(
            asks("basic b3BzOnRvazplbg==").basic_password().as_deref(),
            Some("tok:en")
        );
        assert_eq!(asks("Bearer b3BzOnRvazplbg==").basic_password(), None);
        assert_eq!(asks("Basic not base64!").basic_password(), None);
        // "no colon" in base64.
        assert_eq!(asks("Basic bm8gY29sb24=").basic_password(), None);
    }
}
