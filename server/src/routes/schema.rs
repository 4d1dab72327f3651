//! The shapes of the native routes' answers as the OpenAPI document describes them, for
//! the ones the handlers write by hand or answer in more than one way.

use crate::error::ErrorBody;
use serde::Serialize;
use utoipa::{IntoParams, IntoResponses, ToSchema};

/// IDs handed out: `ids` as JSON numbers, `ids_str` the same IDs as strings in the form
/// `format` asks (for clients, JavaScript among them, that lose digits above 2^53).
#[derive(Serialize, ToSchema)]
#[schema(as = Ids)]
pub(crate) struct IdsBody {
    /// The segment tag (segment routes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tag: Option<String>,
    pub(crate) count: u64,
    pub(crate) ids: Vec<u64>,
    pub(crate) ids_str: Vec<String>,
}

/// The form of `ids_str` (IDs) or of the public IDs (`opaque`).
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)] // Only its schema is used: the routes read the name themselves.
pub(crate) enum Format {
    Decimal,
    Hex,
    Base62,
    Base32,
    Opaque,
}

/// What a client accepts: the usual values (the service reads any `Accept` by its rules,
/// q-values and case included, and answers 406 to one that takes neither JSON nor text).
#[derive(ToSchema)]
#[allow(dead_code)] // As for `Format`.
pub(crate) enum Accept {
    #[schema(rename = "application/json")]
    Json,
    #[schema(rename = "text/plain")]
    Text,
    #[schema(rename = "*/*")]
    Any,
    #[schema(rename = "text/plain;q=0.5, application/json")]
    JsonFirst,
    #[schema(rename = "image/png")]
    Neither,
}

/// The form an ID to decode is written in, when it is all digits but not decimal.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)] // As for `Format`.
pub(crate) enum IdForm {
    Decimal,
    Hex,
    Base62,
    Base32,
}

/// The refusals every ID route can give, each with a JSON body naming the problem.
#[derive(IntoResponses)]
#[allow(dead_code)] // Only its description is used: the routes answer with `ApiError`.
pub(crate) enum Refusals {
    /// A parameter that cannot be used, or one given twice: `error` names it, `limit`
    /// says what it may be.
    #[response(status = 400)]
    BadRequest(ErrorBody<'static>),
    /// The service has tokens and the request sent none it knows.
    #[response(status = 401)]
    Unauthorized(ErrorBody<'static>),
    /// The token is not granted this tag (or `@snowflake`, `@opaque`).
    #[response(status = 403)]
    Forbidden(ErrorBody<'static>),
    /// The request took longer than the service's request timeout.
    #[response(status = 408)]
    Timeout(ErrorBody<'static>),
    /// The store or the lease cannot serve now (starting, a store down, data loss found).
    #[response(status = 503)]
    Unavailable(ErrorBody<'static>),
}

/// Public IDs only, never beside the IDs they hide (`format=opaque`).
#[derive(Serialize, ToSchema)]
#[schema(as = OpaqueIds)]
pub(crate) struct OpaqueBody<'a> {
    /// The segment tag (segment routes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tag: Option<&'a str>,
    pub(crate) count: usize,
    /// The version of the key that made them (a public ID carries it too).
    pub(crate) key_version: u8,
    pub(crate) ids: Vec<String>,
}

/// What an ID route answers in JSON: IDs, or public IDs alone.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // Only its schema is used.
pub(crate) enum Issued {
    Ids(IdsBody),
    Opaque(OpaqueBody<'static>),
}

/// The query of the routes that hand out IDs.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Only its description is used: the routes read `Params`.
pub(crate) struct IdQuery {
    /// How many IDs (1 when absent), up to the service's max_count (100,000 unless
    /// configured).
    #[param(minimum = 1, maximum = 100000)]
    count: Option<u64>,
    /// The form of ids_str (decimal when absent); opaque answers public IDs only, when
    /// the service has opaque keys.
    format: Option<Format>,
}

/// The `Accept` header of the routes that hand out IDs.
#[derive(IntoParams)]
#[into_params(parameter_in = Header, names("Accept"))]
#[allow(dead_code)] // As for `IdQuery`.
pub(crate) struct AcceptHeader(
    /// text/plain for one ID a line; JSON otherwise (q-values honoured).
    #[param(nullable = false)]
    Option<Accept>,
);
