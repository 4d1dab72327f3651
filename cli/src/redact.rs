//! The last line of defence for passwords: every password-like part of the command line
//! and of UIDGEN_MYSQL_URL is replaced by `***` in everything written to stderr, logs
//! included.
//!
//! The library already shows URLs only after parsing them (`redact_url`), but a password
//! can reach stderr by other roads: clap repeats an unexpected argument or an invalid
//! value whole (`uidgen worker mysql://u:pw@h/db`, with the flag forgotten). Stdout is
//! never changed: it holds data (an ID could happen to contain a numeric password).

use std::ffi::OsString;
use std::io::{self, Write};
use std::sync::Arc;

/// Password-like strings found in the arguments and the environment, longest first.
#[derive(Debug, Clone, Default)]
pub struct Secrets(Vec<Vec<u8>>);

impl Secrets {
    /// The secrets in `args` and in the environment's `UIDGEN_MYSQL_URL`.
    pub fn find(args: &[OsString], env: &dyn Fn(&str) -> Option<OsString>) -> Self {
        let mut found = Vec::new();
        let texts = args
            .iter()
            .cloned()
            .chain(env("UIDGEN_MYSQL_URL"))
            .map(|text| text.to_string_lossy().into_owned());
        for text in texts {
            secrets_in(&text, &mut found);
        }
        found.sort_by_key(|s: &String| std::cmp::Reverse(s.len()));
        found.dedup();
        Secrets(found.into_iter().map(String::into_bytes).collect())
    }

    /// `text` with every secret replaced by `***`.
    pub fn scrub(&self, text: &[u8]) -> Vec<u8> {
        let mut out = text.to_vec();
        for secret in &self.0 {
            out = replace(&out, secret, b"***");
        }
        out
    }
}

/// Collects the password-like parts of one argument: the text between any `:` and the
/// last `@` (a URL's password, however the URL is malformed), and the values of
/// credential-like query parameters, each also percent-decoded.
fn secrets_in(text: &str, found: &mut Vec<String>) {
    let mut add = |secret: &str| {
        if !secret.is_empty() {
            found.push(secret.to_owned());
            let decoded = percent_decode(secret);
            if decoded != secret && !decoded.is_empty() {
                found.push(decoded);
            }
        }
    };
    if let Some(at) = text.rfind('@') {
        let before = &text[..at];
        // The password follows the first, second or third colon (`user:`,
        // `scheme:user:`, `--opt=scheme:user:`); a few more are looked at, and no more, so
        // that a hostile argument of many colons cannot make this quadratic.
        for (colon, _) in before.match_indices(':').take(8) {
            let candidate = &before[colon + 1..];
            // `scheme://user:…`: the part after the scheme's colon is not the password;
            // the part after the user's colon, found next, is.
            if !candidate.starts_with('/') {
                add(candidate);
            }
        }
    }
    if let Some(query) = text.find('?').map(|q| &text[q + 1..]) {
        for pair in query.split(['&', ';']).take(64) {
            if let Some((key, value)) = pair.split_once('=') {
                if uidgen::is_credential_key(key) {
                    add(value.split('#').next().unwrap_or(value));
                }
            }
        }
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn replace(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() || from.len() > text.len() {
        return text.to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

/// A writer that scrubs secrets from everything written through it (stderr).
pub struct Scrubbed<W> {
    inner: W,
    secrets: Arc<Secrets>,
}

impl<W: Write> Scrubbed<W> {
    /// Wraps `inner`.
    pub fn new(inner: W, secrets: Arc<Secrets>) -> Self {
        Self { inner, secrets }
    }
}

impl<W: Write> Write for Scrubbed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Whole messages are written at once (one write_all per message or log event),
        // so a secret is never split between two calls. Scrubbed before long lines are
        // cut, so a cut never leaves the first half of a password.
        let scrubbed = self.secrets.scrub(buf);
        self.inner
            .write_all(&crate::output::cut_long_lines(&scrubbed))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets_of(args: &[&str]) -> Secrets {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        Secrets::find(&args, &|_| None)
    }

    #[test]
    fn passwords_in_every_shape_of_url_are_found() {
        for url in [
            "mysql://u:SECRETPW@127.0.0.1/db",
            "mysql:u:SECRETPW@127.0.0.1/db",
            "mysql:/u:SECRETPW@127.0.0.1/db",
            "u:SECRETPW@127.0.0.1/db",
            "--mysql-url=mysql://u:SECRETPW@h/db",
            "mysql://u:SECRETPW@h:99999/db",
            "mysql://u:SEC%52ETPW@h/db",
            "mysql://u@h/db?password=SECRETPW",
            "mysql://u@h/db?x=1&PWD=SECRETPW#frag",
        ] {
            let scrubbed = secrets_of(&[url]).scrub(format!("error: {url} ...").as_bytes());
            let scrubbed = String::from_utf8(scrubbed).unwrap();
            assert!(!scrubbed.contains("SECRETPW"), "{url} -> {scrubbed}");
            assert!(scrubbed.contains("***"), "{url} -> {scrubbed}");
        }
        // A password with an @ in it: the last @ ends it.
        let scrubbed = secrets_of(&["mysql://u:SEC@RETPW@h:99999/db"])
            .scrub(b"unexpected argument 'mysql://u:SEC@RETPW@h:99999/db'");
        let scrubbed = String::from_utf8(scrubbed).unwrap();
        assert!(!scrubbed.contains("RETPW"), "{scrubbed}");
        assert!(!scrubbed.contains("SEC"), "{scrubbed}");
    }

    #[test]
    fn a_password_where_a_long_line_is_cut_is_hidden_whole() {
        let url = format!("mysql://u:{}SECRETPW@h/db", "p".repeat(190));
        let secrets = Arc::new(secrets_of(&[&url]));
        let mut out = Vec::new();
        let line = format!("error: unexpected argument '{url}' {}\n", "x".repeat(2000));
        Scrubbed::new(&mut out, secrets)
            .write_all(line.as_bytes())
            .unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(!out.contains("ppppp"), "{out}");
        assert!(out.contains("line cut"), "{out}");
    }

    #[test]
    fn many_colons_are_not_quadratic() {
        let hostile = format!("{}@h", ":".repeat(200_000));
        let start = std::time::Instant::now();
        let secrets = secrets_of(&[&hostile]);
        assert!(secrets.0.len() <= 16);
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn urls_without_passwords_and_other_arguments_are_left_alone() {
        let secrets = secrets_of(&["next", "-n", "5", "mysql://root@db.example.com/t"]);
        assert!(secrets.0.is_empty(), "{secrets:?}");
        let env = |name: &str| (name == "UIDGEN_MYSQL_URL").then(|| "mysql://a:ENVPW@h/d".into());
        let secrets = Secrets::find(&[], &env);
        assert_eq!(secrets.scrub(b"x ENVPW y"), b"x *** y");
    }
}
