//! `uidgen probe`: one HTTP GET, success when the answer is 2xx. For health checks where
//! no curl is at hand (a container image of the binary alone).

use crate::output::{Failure, Lines};
use std::io::Write;
use std::time::Duration;

/// Probes `url` (`http://HOST:PORT/PATH`) within `timeout`: for 2xx, prints the status
/// line and returns success; otherwise a failure with the status and the answer's words.
pub(crate) fn run(url: &str, timeout: Duration, stdout: &mut dyn Write) -> Result<u8, Failure> {
    let answer = crate::http::get(url, timeout).map_err(|e| Failure::msg(format!("probe: {e}")))?;
    if !(200..300).contains(&answer.status) {
        let body: String = answer.body.trim().chars().take(300).collect();
        return Err(Failure::msg(format!(
            "probe: {url} answered {}: {body}",
            answer.status
        )));
    }
    let mut out = Lines::new(stdout);
    out.line(format_args!("{}", answer.status_line))?;
    out.flush()?;
    Ok(crate::SUCCESS)
}
