//! The OpenAPI 3 document of the native routes, made from the handlers' own annotations
//! (`#[utoipa::path]`) and answer types, served at `/openapi.json` and kept in the
//! repository as `server/openapi.json` (a test fails when the two differ).

use super::schema::{Accept, Format, IdForm};
use super::{cosid, json, native, ops, status};
use axum::http::StatusCode;
use axum::response::Response;
use std::sync::LazyLock;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "uidgen",
        description = "Unique 64-bit IDs: snowflake IDs from a leased worker ID, segment IDs \
                       per tag from a store, and opaque public IDs; and CosId's proxy routes \
                       (machine IDs, segments, IDs) as its clients expect them. Leaf's and \
                       Tinyid's routes are served beside these, as their clients expect them, \
                       and are not described here.",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        native::snowflake,
        native::segment,
        native::range,
        native::give_back,
        native::decode,
        native::reveal,
        cosid::distribute,
        cosid::guard,
        cosid::revert,
        cosid::create_segment,
        cosid::next_max_id,
        cosid::share,
        cosid::share_text,
        cosid::named,
        cosid::named_text,
        ops::healthz,
        ops::readyz,
        ops::metrics,
        status::page,
        status::json,
        document,
    ),
    components(schemas(Format, IdForm, Accept)),
    modifiers(&Bearer),
    tags(
        (name = "ids", description = "IDs handed out"),
        (name = "decoding", description = "What an ID holds"),
        (name = "cosid", description = "CosId's proxy protocol: machine IDs, segments, IDs"),
        (name = "operations", description = "Health, readiness, metrics, the status page and this document"),
    )
)]
struct Document;

/// The bearer scheme the ID routes take when the service has tokens.
struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "Needed when the service has tokens (UIDGEN_TOKENS or tokens_file): \
                         a token granted the tag, `@snowflake`, `@opaque`, `@machines` or `*`",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "basic",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Basic)
                    .description(Some(
                        "The status routes only, for browsers: any user name, a token granted \
                         `@status` or `*` as the password",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document as JSON, made once.
static OPENAPI_JSON: LazyLock<String> = LazyLock::new(|| {
    Document::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\":\"the document could not be written: {e}\"}}"))
});

/// `GET /openapi.json`: this document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    summary = "This document (OpenAPI 3.1)",
    responses((status = 200, description = "The document", content_type = "application/json",
               body = Object))
)]
pub(super) async fn document() -> Response {
    json(StatusCode::OK, OPENAPI_JSON.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_MAX_COUNT;
    use crate::route_table::{Family, ROUTES};
    use serde_json::Value;

    fn document() -> Value {
        serde_json::from_str(&OPENAPI_JSON).expect("the document is JSON")
    }

    #[test]
    fn the_document_in_the_repository_is_the_one_the_code_makes() {
        let kept = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.json");
        let made = format!("{}\n", *OPENAPI_JSON);
        if std::env::var_os("UIDGEN_WRITE_OPENAPI").is_some() {
            std::fs::write(kept, &made).unwrap();
        }
        let on_disk = std::fs::read_to_string(kept).unwrap_or_default();
        assert!(
            on_disk == made,
            "server/openapi.json is not what the code makes: run \
             UIDGEN_WRITE_OPENAPI=1 cargo test -p uidgen-server openapi, and commit it"
        );
    }

    #[test]
    fn every_native_cosid_and_operations_route_is_described_and_nothing_else() {
        let document = document();
        let mut described: Vec<&str> = document["paths"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        described.sort_unstable();
        let mut served: Vec<&str> = ROUTES
            .iter()
            .filter(|entry| {
                matches!(
                    entry.family,
                    Family::Native | Family::CosId | Family::Operations
                )
            })
            .map(|entry| entry.template)
            .collect();
        served.sort_unstable();
        assert_eq!(described, served);
    }

    #[test]
    fn every_id_route_names_its_errors_and_the_bearer_scheme() {
        let document = document();
        assert_eq!(
            document["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
        for (path, method) in [
            ("/v1/snowflake", "get"),
            ("/v1/segment/{tag}", "get"),
            ("/v1/segment/{tag}/range", "post"),
            ("/v1/opaque/{public}", "get"),
        ] {
            let operation = &document["paths"][path][method];
            for status in ["200", "400", "401", "403", "408", "503"] {
                let error = &operation["responses"][status];
                assert!(error.is_object(), "{path}: no {status}");
            }
            assert!(
                operation["security"].to_string().contains("bearer"),
                "{path}"
            );
        }
        let count = document["paths"]["/v1/snowflake"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "count")
            .cloned()
            .unwrap();
        assert_eq!(count["schema"]["maximum"], DEFAULT_MAX_COUNT);
    }
}
