//! No `Display` or `Debug` output of anything that holds a database URL, nor of any error
//! (with its whole source chain) a bad or failing URL produces, shows the password, for
//! every shape of URL users have written: no scheme, one slash, an `@` inside the
//! password, percent-encoding, a password in the query, a port out of range.

use std::error::Error;
use std::time::Duration;
use uidgen::{BitsAllocator, MySqlWorkerIdAssigner, Preset, WorkerIdAssigner};

const SECRET: &str = "SECRETPW";

fn mysql_port() -> String {
    std::env::var("UIDGEN_MYSQL_URL")
        .ok()
        .and_then(|url| {
            url.rsplit_once(':')
                .map(|(_, rest)| rest.split('/').next().unwrap_or("3306").to_owned())
        })
        .filter(|p| p.parse::<u16>().is_ok())
        .unwrap_or_else(|| "3306".into())
}

/// Every URL shape, aimed at: a closed port, a real server (wrong password), a name that
/// does not resolve, or nothing parsable at all.
fn urls() -> Vec<String> {
    let live = mysql_port();
    vec![
        format!("mysql://u:{SECRET}@127.0.0.1:1/db"),
        format!("mysql://root:{SECRET}@127.0.0.1:{live}/test"),
        "mysql://u:SEC@RETPW@127.0.0.1:1/db".into(),
        "mysql://u:SEC%40RETPW@127.0.0.1:1/db".into(),
        "mysql://u:SEC@RETPW@h:99999/db".into(),
        format!("mysql:u:{SECRET}@127.0.0.1/db"),
        format!("mysql:/u:{SECRET}@127.0.0.1/db"),
        format!("u:{SECRET}@127.0.0.1/db"),
        format!("mysql://u@127.0.0.1:1/db?password={SECRET}"),
        format!("mysql://u:{SECRET}@127.0.0.1:1/db?ssl-mode={SECRET}"),
        format!("mysql://u:{SECRET}@uidgen-no-such-host.invalid/db"),
        format!("postgres://u:{SECRET}@127.0.0.1/db"),
        format!("mysql://u:{SECRET}@127.0.0.1:1/db#{SECRET}"),
    ]
}

/// The pieces of the password that must never show, however it was split or encoded.
fn leaks(text: &str) -> bool {
    ["SECRETPW", "SEC@RETPW", "SEC%40RETPW", "RETPW"]
        .iter()
        .any(|piece| text.contains(piece))
}

/// `Display` and `Debug` of an error and of every error in its source chain.
fn everything_shown(err: &(dyn Error + 'static)) -> String {
    let mut shown = String::new();
    let mut next = Some(err);
    while let Some(err) = next {
        shown.push_str(&format!("{err}\n{err:?}\n"));
        next = err.source();
    }
    shown
}

#[test]
fn no_output_of_an_assigner_or_its_errors_shows_the_password() {
    // Enough worker bits for one row per launch, so each URL reaches its network error.
    let bits = BitsAllocator::preset(Preset::UidGeneratorReadme).unwrap();
    let mut checked = 0;
    for url in urls() {
        let shown = match MySqlWorkerIdAssigner::new(&url) {
            Err(err) => everything_shown(&err),
            Ok(assigner) => {
                let assigner = assigner.timeout(Duration::from_millis(500));
                let mut shown = format!("{assigner:?}\n{}\n", assigner.location());
                match assigner.assign_worker_id(&bits) {
                    Err(err) => shown.push_str(&everything_shown(&err)),
                    Ok(assigned) => panic!("{url} assigned {assigned}"),
                }
                // The default layout's refusal names the registry too.
                let refused = assigner
                    .assign_worker_id(&BitsAllocator::default())
                    .unwrap_err();
                shown.push_str(&everything_shown(&refused));
                shown
            }
        };
        assert!(!leaks(&shown), "{url} showed its password:\n{shown}");
        checked += 1;
    }
    assert_eq!(checked, urls().len());
}

#[test]
fn the_errors_still_say_what_went_wrong() {
    let bits = BitsAllocator::preset(Preset::UidGeneratorReadme).unwrap();
    let closed = MySqlWorkerIdAssigner::new(&format!("mysql://u:{SECRET}@127.0.0.1:1/db"))
        .unwrap()
        .assign_worker_id(&bits)
        .unwrap_err();
    assert!(closed.to_string().contains("127.0.0.1:1"), "{closed}");
    let wrong = MySqlWorkerIdAssigner::new(&format!(
        "mysql://root:{SECRET}@127.0.0.1:{}/test",
        mysql_port()
    ))
    .unwrap()
    .assign_worker_id(&bits)
    .unwrap_err();
    assert!(
        wrong.to_string().contains("wrong user name or password"),
        "{wrong}"
    );
    let unparsable =
        MySqlWorkerIdAssigner::new(&format!("mysql:u:{SECRET}@127.0.0.1/db")).unwrap_err();
    assert!(unparsable.to_string().contains("not shown"), "{unparsable}");
    let query = MySqlWorkerIdAssigner::new(&format!("mysql://u@127.0.0.1:1/db?password={SECRET}"))
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(
        query.is_empty() || query.contains("password=***"),
        "{query}"
    );
}
