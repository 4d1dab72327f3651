//! What a call of the client can fail with.

/// Why the client could not hand out an ID.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// A server refused the request for a reason of the caller's (a 4xx other than 408:
    /// a missing or wrong token, an unknown tag, a bad count). Not retried elsewhere.
    #[error("{server} refused the request ({status}): {error}{}", limit.as_ref().map(|l| format!(" (allowed: {l})")).unwrap_or_default())]
    Refused {
        /// The server that refused.
        server: String,
        /// The HTTP status.
        status: u16,
        /// The service's words.
        error: String,
        /// The limit broken, where there is one.
        limit: Option<String>,
    },
    /// No server could serve: each one with what it answered.
    #[error("no server could serve: {}", .0.iter().map(|(s, why)| format!("{s}: {why}")).collect::<Vec<_>>().join("; "))]
    Unavailable(Vec<(String, String)>),
    /// The client is closed.
    #[error("the client is closed")]
    Closed,
    /// A setting cannot be used.
    #[error("{what}: {problem}")]
    Config {
        /// The setting.
        what: &'static str,
        /// What is wrong, and what it may be.
        problem: String,
    },
}
