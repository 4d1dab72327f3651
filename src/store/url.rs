//! Store URLs shown to people: parsed, with every password replaced.

/// `raw` with its password (and any password-like query parameter) replaced by `***`.
///
/// The URL is parsed (`url::Url`), never split by hand, so `user:p@ss@host` and
/// percent-encoded passwords are found. A URL that does not parse as
/// `scheme://[user[:password]@]host[:port][/path][?query]` is not shown at all if it
/// could hold a password (it has an `@` or a password-like word): where the password
/// is in it cannot be known. Long input is cut short.
///
/// ```
/// use uidgen::redact_url;
///
/// assert_eq!(redact_url("mysql://u:se@cret@db:3306/ids"), r#""mysql://u:***@db:3306/ids""#);
/// assert_eq!(redact_url("mysql://db/ids?password=secret"), r#""mysql://db/ids?password=***""#);
/// assert!(!redact_url("mysql:u:secret@db/ids").contains("secret"));
/// ```
pub fn redact_url(raw: &str) -> String {
    let hidden = || {
        if raw.contains('@') || super::is_credential_key(raw) {
            "(not shown: it does not parse as scheme://user:password@host/path, so its \
             password cannot be found to hide)"
                .to_owned()
        } else {
            crate::error::Shown(raw).to_string()
        }
    };
    let Ok(mut url) = url::Url::parse(raw.trim()) else {
        return hidden();
    };
    if url.cannot_be_a_base() || !url.has_host() {
        return hidden();
    }
    // The password as written and decoded: it is scrubbed from the whole output too, in
    // case the user also pasted it elsewhere in the URL.
    let password = url.password().map(|p| {
        let decoded = percent_decode(p);
        (p.to_owned(), decoded)
    });
    if password.is_some() && url.set_password(Some("***")).is_err() {
        return hidden();
    }
    if url.query().is_some() {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(key, value)| {
                let value = if super::is_credential_key(&key) {
                    "***".to_owned()
                } else {
                    value.into_owned()
                };
                (key.into_owned(), value)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.set_fragment(None);
    let mut shown = url.as_str().to_owned();
    if let Some((written, decoded)) = password {
        let prefix_end = shown.find("***").map_or(0, |i| i + 3);
        let (prefix, rest) = shown.split_at(prefix_end);
        let mut rest = rest.to_owned();
        for secret in [written, decoded] {
            if !secret.is_empty() {
                rest = rest.replace(&secret, "***");
            }
        }
        shown = format!("{prefix}{rest}");
    }
    crate::error::Shown(&shown).to_string()
}

/// `%XX` sequences decoded (lossily: a password is only matched, never shown).
pub(crate) fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn every_shape_of_password_is_hidden() {
        for (raw, shown) in [
            (
                "mysql://u:SECRETPW@h:3306/db",
                Some("mysql://u:***@h:3306/db"),
            ),
            ("mysql://u:SEC@RETPW@h/db", Some("mysql://u:***@h/db")),
            ("mysql://u:SEC%40RETPW@h/db", Some("mysql://u:***@h/db")),
            (
                "mysql://u@h/db?password=SECRETPW&x=1",
                Some("mysql://u@h/db?password=***&x=1"),
            ),
            (
                "mysql://u@h/db?PWD=SECRETPW",
                Some("mysql://u@h/db?PWD=***"),
            ),
            ("mysql://u@h/db#SECRETPW", Some("mysql://u@h/db")),
            ("mysql://u:SEC@RETPW@h:99999/db", None),
            ("mysql:u:SECRETPW@127.0.0.1/db", None),
            ("mysql:/u:SECRETPW@127.0.0.1/db", None),
            ("u:SECRETPW@127.0.0.1/db", None),
        ] {
            let redacted = redact_url(raw);
            assert!(!redacted.contains("SEC"), "{raw} -> {redacted}");
            match shown {
                Some(shown) => assert_eq!(redacted, format!("{shown:?}"), "{raw}"),
                None => assert!(redacted.contains("not shown"), "{raw} -> {redacted}"),
            }
        }
    }

    #[test]
    fn urls_that_cannot_hold_a_password_are_shown_even_unparsed() {
        assert_eq!(redact_url("not a url"), "\"not a url\"");
        assert!(redact_url(&"x".repeat(10_000)).len() < 200);
    }
}
