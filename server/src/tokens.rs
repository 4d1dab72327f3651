//! Bearer tokens and what each may draw. Compared in constant time; never shown.

use subtle::ConstantTimeEq;

/// The snowflake routes' name in token grants (`TOKEN=@snowflake,order`).
pub const SNOWFLAKE_GRANT: &str = "@snowflake";
/// The opaque-ID decoding route's name in token grants (`TOKEN=@opaque`).
pub const OPAQUE_GRANT: &str = "@opaque";
/// The status page's name in token grants (`TOKEN=@status`); `*` grants it too.
pub const STATUS_GRANT: &str = "@status";
/// CosId's machine-ID routes' name in token grants (`TOKEN=@machines`); `*` grants it
/// too.
pub const MACHINES_GRANT: &str = "@machines";
/// The names token grants give routes, which no segment tag may take.
pub(crate) const GRANT_NAMES: [&str; 4] =
    [SNOWFLAKE_GRANT, OPAQUE_GRANT, STATUS_GRANT, MACHINES_GRANT];

/// A token list that cannot be read (the token itself is never named).
#[derive(Debug, thiserror::Error)]
#[error("tokens from {source_name}: {problem}")]
pub struct TokensError {
    /// `UIDGEN_TOKENS` or the file.
    pub(crate) source_name: String,
    /// What is wrong, with the line number.
    pub(crate) problem: String,
}

/// The longest token accepted, in bytes.
pub const MAX_TOKEN_LEN: usize = 256;
/// The shortest token accepted, in bytes: shorter ones are guessable.
pub const MIN_TOKEN_LEN: usize = 16;

/// Tokens and the tags each may draw. `Debug` shows how many, never a token.
#[derive(Clone, Default)]
pub struct Tokens {
    entries: Vec<Entry>,
}

#[derive(Clone)]
struct Entry {
    token: Vec<u8>,
    /// `None`: every tag.
    tags: Option<Vec<String>>,
}

/// What a request's token allows for one tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No tokens configured: everyone may draw everything.
    Open,
    /// The token may draw this tag.
    Granted,
    /// No token given, or one that is not known: 401.
    Unknown,
    /// A known token for other tags: 403.
    Forbidden,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} configured)", self.entries.len())
    }
}

impl Tokens {
    /// Reads `TOKEN=tag,tag` entries, one a line or separated by `;`, `#` starting a
    /// comment line; `*` grants every tag. `source` names where they came from, for
    /// errors (which give line numbers, never a token).
    pub fn parse(text: &str, source: &str) -> Result<Self, TokensError> {
        let problem = |line: usize, what: &str| TokensError {
            source_name: source.to_owned(),
            problem: format!("entry {line}: {what}"),
        };
        let mut entries = Vec::new();
        let items = text
            .split(['\n', ';'])
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        for (i, item) in items.enumerate() {
            let n = i + 1;
            let (token, tags) = item
                .split_once('=')
                .ok_or_else(|| problem(n, "expected TOKEN=tag,tag (or TOKEN=*)"))?;
            let token = token.trim();
            if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&token.len()) {
                return Err(problem(
                    n,
                    &format!(
                        "a token must be {MIN_TOKEN_LEN} to {MAX_TOKEN_LEN} bytes (this one has {})",
                        token.len()
                    ),
                ));
            }
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(problem(
                    n,
                    "a token may hold only printable ASCII without spaces",
                ));
            }
            let tags: Vec<String> = tags
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(String::from)
                .collect();
            if tags.is_empty() {
                return Err(problem(n, "no tags after '=' (use * for every tag)"));
            }
            // `*` alone is every tag; beside names (`*,@opaque`) it keeps them.
            let tags = (tags != ["*"]).then_some(tags);
            if entries.iter().any(|e: &Entry| e.token == token.as_bytes()) {
                return Err(problem(n, "the same token twice"));
            }
            entries.push(Entry {
                token: token.as_bytes().to_vec(),
                tags,
            });
        }
        if entries.is_empty() {
            // An empty file must not quietly mean "no authentication".
            return Err(TokensError {
                source_name: source.to_owned(),
                problem: "it holds no token (only blank lines or comments). To run without \
                          tokens, leave out tokens_file and UIDGEN_TOKENS: the service then \
                          listens on loopback only, unless allow_public is set"
                    .to_owned(),
            });
        }
        Ok(Self { entries })
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is configured (the service is open).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What `token` allows for `tag`. Every configured token is compared, each in
    /// constant time, so the time taken does not say how much of a token was right.
    /// `*` grants every tag and `@snowflake`, but not `@opaque`, which is granted only
    /// by name.
    pub fn access(&self, token: Option<&str>, tag: &str) -> Access {
        if self.entries.is_empty() {
            return Access::Open;
        }
        let Some(token) = token else {
            return Access::Unknown;
        };
        let mut found: Option<&Entry> = None;
        for entry in &self.entries {
            if bool::from(entry.token.as_slice().ct_eq(token.as_bytes())) {
                found = Some(entry);
            }
        }
        match found {
            None => Access::Unknown,
            // `*` is every tag and the snowflake routes, not mapping public IDs back:
            // a client that may draw IDs must not undo `format=opaque` unless granted.
            Some(Entry { tags: None, .. }) if tag != OPAQUE_GRANT => Access::Granted,
            Some(Entry {
                tags: Some(tags), ..
            }) if tags
                .iter()
                .any(|t| t == tag || (t == "*" && tag != OPAQUE_GRANT)) =>
            {
                Access::Granted
            }
            Some(_) => Access::Forbidden,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaa-order";
    const B: &str = "bbbbbbbbbbbbbbbb-all";

    #[test]
    fn a_token_draws_its_own_tags_only() {
        let tokens =
            Tokens::parse(&format!("{A}=order,@snowflake\n# comment\n{B}=*"), "test").unwrap();
        assert_eq!(tokens.access(Some(A), "order"), Access::Granted);
        assert_eq!(tokens.access(Some(A), "@snowflake"), Access::Granted);
        assert_eq!(tokens.access(Some(A), "user"), Access::Forbidden);
        assert_eq!(tokens.access(Some(B), "user"), Access::Granted);
        assert_eq!(tokens.access(Some(B), "@snowflake"), Access::Granted);
        // Mapping public IDs back is granted by name only.
        assert_eq!(tokens.access(Some(B), "@opaque"), Access::Forbidden);
        // `*` beside a name keeps the name: every tag, and mapping public IDs back.
        let both = Tokens::parse(&format!("{A}=*,@opaque"), "test").unwrap();
        for tag in ["order", SNOWFLAKE_GRANT, OPAQUE_GRANT] {
            assert_eq!(both.access(Some(A), tag), Access::Granted, "{tag}");
        }
        let named = Tokens::parse(&format!("{A}=@opaque"), "test").unwrap();
        assert_eq!(named.access(Some(A), "@opaque"), Access::Granted);
        assert_eq!(
            tokens.access(Some("aaaaaaaaaaaaaaaa"), "order"),
            Access::Unknown
        );
        assert_eq!(tokens.access(None, "order"), Access::Unknown);
        assert_eq!(Tokens::default().access(None, "x"), Access::Open);
    }

    #[test]
    fn errors_and_debug_never_show_a_token() {
        let tokens = Tokens::parse(&format!("{A}=order"), "test").unwrap();
        assert!(!format!("{tokens:?}").contains(A));
        for bad in [
            A.to_string(),
            format!("{A}="),
            "short=order".to_string(),
            format!("{A} x=order"),
            format!("{A}=order;{A}=user"),
        ] {
            let err = Tokens::parse(&bad, "UIDGEN_TOKENS")
                .unwrap_err()
                .to_string();
            assert!(err.contains("UIDGEN_TOKENS"), "{err}");
            assert!(!err.contains("aaaaaaaa"), "{err}");
        }
    }
}
