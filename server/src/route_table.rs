//! Every route the service answers, written once. The router is built from [`ROUTES`]
//! (`routes/mod.rs` gives each its handler), and the fast path, the metric labels, the
//! access log, the 404's list and the OpenAPI document's check read it. A leaf: it
//! imports nothing of the crate, so all of those can import it.

/// A route the service answers; [`ROUTES`] gives its template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Snowflake,
    Segment,
    Range,
    GiveBack,
    Decode,
    Reveal,
    LeafSegment,
    LeafSnowflake,
    LeafDecode,
    TinyidNextId,
    TinyidNextIdSimple,
    TinyidNextSegmentId,
    TinyidNextSegmentIdSimple,
    CosIdMachines,
    CosIdCreateSegment,
    CosIdNextMaxId,
    CosIdIds,
    CosIdIdsText,
    CosIdIdsNamedText,
    CosIdIdsNamed,
    Healthz,
    Readyz,
    Metrics,
    OpenApi,
    Status,
    StatusJson,
}

/// Whose protocol a route is: the OpenAPI document describes the native, CosId's and
/// operations routes; Leaf's and Tinyid's are described by their projects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Native,
    Leaf,
    Tinyid,
    CosId,
    Operations,
}

/// One row of the table.
#[derive(Debug)]
pub(crate) struct RouteEntry {
    pub(crate) route: Route,
    /// The path as the router matches it: each `{name}` is one non-empty segment.
    pub(crate) template: &'static str,
    pub(crate) family: Family,
    /// Where the template's `{name}` starts and ends (past its `}`), found once here:
    /// matching runs on every request, and scanning templates there cost more than the
    /// rest of a single-ID answer (callgrind, `scripts/loadtest`).
    parameter: Option<(usize, usize)>,
    /// The template has more than one `{name}` (CosId's segment routes): matched segment
    /// by segment, off the hot path.
    several: bool,
}

const fn entry(route: Route, template: &'static str, family: Family) -> RouteEntry {
    RouteEntry {
        route,
        template,
        family,
        parameter: parameter_span(template),
        several: parameters(template) > 1,
    }
}

/// How many `{name}`s `template` has.
const fn parameters(template: &str) -> usize {
    let bytes = template.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < bytes.len() {
        if bytes[i] == b'{' {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The span of the one `{name}` in `template`, if it has one.
const fn parameter_span(template: &str) -> Option<(usize, usize)> {
    let bytes = template.as_bytes();
    let mut open = 0;
    while open < bytes.len() && bytes[open] != b'{' {
        open += 1;
    }
    if open == bytes.len() {
        return None;
    }
    let mut end = open;
    while end < bytes.len() && bytes[end] != b'}' {
        end += 1;
    }
    // A template without its `}` stops the build rather than a request.
    assert!(end < bytes.len(), "a route template's {{ without its }}");
    Some((open, end + 1))
}

/// Every route, in the order the 404 lists them.
pub(crate) const ROUTES: [RouteEntry; 26] = [
    entry(Route::Snowflake, "/v1/snowflake", Family::Native),
    entry(Route::Segment, "/v1/segment/{tag}", Family::Native),
    entry(Route::Range, "/v1/segment/{tag}/range", Family::Native),
    entry(
        Route::GiveBack,
        "/v1/segment/{tag}/giveback",
        Family::Native,
    ),
    entry(Route::Decode, "/v1/decode/{id}", Family::Native),
    entry(Route::Reveal, "/v1/opaque/{public}", Family::Native),
    entry(Route::LeafSegment, "/api/segment/get/{key}", Family::Leaf),
    entry(
        Route::LeafSnowflake,
        "/api/snowflake/get/{key}",
        Family::Leaf,
    ),
    entry(Route::LeafDecode, "/decodeSnowflakeId", Family::Leaf),
    entry(Route::TinyidNextId, "/tinyid/id/nextId", Family::Tinyid),
    entry(
        Route::TinyidNextIdSimple,
        "/tinyid/id/nextIdSimple",
        Family::Tinyid,
    ),
    entry(
        Route::TinyidNextSegmentId,
        "/tinyid/id/nextSegmentId",
        Family::Tinyid,
    ),
    entry(
        Route::TinyidNextSegmentIdSimple,
        "/tinyid/id/nextSegmentIdSimple",
        Family::Tinyid,
    ),
    entry(Route::CosIdMachines, "/machines/{namespace}", Family::CosId),
    entry(
        Route::CosIdCreateSegment,
        "/segments/distributor/{namespace}/{name}",
        Family::CosId,
    ),
    entry(
        Route::CosIdNextMaxId,
        "/segments/{namespace}/{name}",
        Family::CosId,
    ),
    entry(Route::CosIdIds, "/ids", Family::CosId),
    // Before `/ids/{name}`, which its path fits too: CosId's own order of precedence.
    entry(Route::CosIdIdsText, "/ids/as-string", Family::CosId),
    entry(
        Route::CosIdIdsNamedText,
        "/ids/as-string/{name}",
        Family::CosId,
    ),
    entry(Route::CosIdIdsNamed, "/ids/{name}", Family::CosId),
    entry(Route::Healthz, "/healthz", Family::Operations),
    entry(Route::Readyz, "/readyz", Family::Operations),
    entry(Route::Metrics, "/metrics", Family::Operations),
    entry(Route::OpenApi, "/openapi.json", Family::Operations),
    entry(Route::Status, "/status", Family::Operations),
    entry(Route::StatusJson, "/status.json", Family::Operations),
];

/// The label of any path no route takes (a 404), so that no path a client makes up
/// becomes a label.
pub(crate) const OTHER: &str = "(other)";

/// The duration metric's and the access log's labels, by index: every route's template
/// in [`ROUTES`]' order, then [`OTHER`].
pub(crate) const ROUTE_TEMPLATES: [&str; ROUTES.len() + 1] = {
    let mut labels = [OTHER; ROUTES.len() + 1];
    let mut i = 0;
    while i < ROUTES.len() {
        labels[i] = ROUTES[i].template;
        i += 1;
    }
    labels
};

/// The route that answers `path`, as the router matches it, with the raw value of its
/// path parameter if it has one: an index in [`ROUTES`].
pub(crate) fn find(path: &str) -> Option<(usize, Option<&str>)> {
    ROUTES
        .iter()
        .enumerate()
        .find_map(|(index, entry)| Some((index, entry.matches(path)?)))
}

impl RouteEntry {
    /// `Some(parameter)` when `path` fits the template: the text around `{name}` equal,
    /// and `{name}` one non-empty segment.
    fn matches<'a>(&self, path: &'a str) -> Option<Option<&'a str>> {
        // Most templates differ from a path in its second byte (`/v1/…`, `/api/…`,
        // `/tinyid/…`): a load and a compare, before any call to memcmp.
        if path.as_bytes().get(1) != self.template.as_bytes().get(1) {
            return None;
        }
        if self.several {
            return by_segments(self.template, path);
        }
        let Some((open, end)) = self.parameter else {
            return (path == self.template).then_some(None);
        };
        let (prefix, suffix) = (&self.template[..open], &self.template[end..]);
        if path.len() <= prefix.len() + suffix.len()
            || !path.starts_with(prefix)
            || !path.ends_with(suffix)
        {
            return None;
        }
        let parameter = path.get(open..path.len() - suffix.len())?;
        (!parameter.bytes().any(|b| b == b'/')).then_some(Some(parameter))
    }
}

/// The rule `find` implements, written plainly: segment by segment, each `{name}` one
/// non-empty segment; the first parameter's value.
fn by_segments<'a>(template: &str, path: &'a str) -> Option<Option<&'a str>> {
    let mut parameter = None;
    let (mut wanted, mut given) = (template.split('/'), path.split('/'));
    loop {
        match (wanted.next(), given.next()) {
            (None, None) => return Some(parameter),
            (Some(want), Some(got)) if want.starts_with('{') && !got.is_empty() => {
                parameter = parameter.or(Some(got));
            }
            (Some(want), Some(got)) if want == got => {}
            _ => return None,
        }
    }
}

/// The index in [`ROUTE_TEMPLATES`] of the route that answers `path`.
pub(crate) fn route_index(path: &str) -> usize {
    find(path).map_or(ROUTES.len(), |(index, _)| index)
}

impl Family {
    const ALL: [Family; 5] = [
        Family::Native,
        Family::Leaf,
        Family::Tinyid,
        Family::CosId,
        Family::Operations,
    ];

    fn name(self) -> &'static str {
        match self {
            Family::Native => "native",
            Family::Leaf => "Leaf's",
            Family::Tinyid => "Tinyid's",
            Family::CosId => "CosId's",
            Family::Operations => "operations",
        }
    }
}

/// The 404's list: every template, by family (`native: /v1/snowflake, …; Leaf's: …`).
pub(crate) fn listed() -> String {
    Family::ALL
        .iter()
        .map(|family| {
            let templates: Vec<&str> = ROUTES
                .iter()
                .filter(|entry| entry.family == *family)
                .map(|entry| entry.template)
                .collect();
            format!("{}: {}", family.name(), templates.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A path the template matches: each `{name}` replaced by `x1`.
    pub(crate) fn concrete(template: &str) -> String {
        template
            .split('/')
            .map(|part| if part.starts_with('{') { "x1" } else { part })
            .collect::<Vec<_>>()
            .join("/")
    }

    #[test]
    fn every_path_is_named_by_its_route_and_nothing_else_becomes_a_label() {
        let other = ROUTE_TEMPLATES.len() - 1;
        assert_eq!(ROUTE_TEMPLATES[other], OTHER);
        for (index, entry) in ROUTES.iter().enumerate() {
            assert_eq!(ROUTE_TEMPLATES[index], entry.template);
            assert_eq!(route_index(&concrete(entry.template)), index, "{entry:?}");
        }
        for path in [
            "",
            "/",
            "/v1/segment/",
            "/v1/segment/a/b",
            "/v1/segment//range",
            "/v1/segment/a/b/range",
            "/api/segment/get/",
            "/api/snowflake/get/a/b",
            "/v1/decode/",
            "/v1/snowflakes",
            "/v1/snowflake/",
            "(other)",
            "/metrics/",
            "//metrics",
            "/{tag}",
            "/v1/segment/{tag}/range/x",
        ] {
            assert_eq!(route_index(path), other, "{path}");
        }
    }

    #[test]
    fn the_fast_match_agrees_with_the_segment_rule_on_every_shape_of_path() {
        for entry in &ROUTES {
            let braces = entry.template.matches('{').count();
            assert_eq!(braces > 1, entry.several, "{entry:?}");
            if let Some((open, end)) = entry.parameter {
                assert!(entry.template[..open].ends_with('/'), "{entry:?}");
                let suffix = &entry.template[end..];
                assert!(suffix.is_empty() || suffix.starts_with('/'), "{entry:?}");
            }
        }
        let mut paths: Vec<String> = [
            "",
            "/",
            "//",
            "/{tag}",
            "/v1/segment//range",
            "/v1/segment/a/b",
        ]
        .map(String::from)
        .to_vec();
        for entry in &ROUTES {
            let path = concrete(entry.template);
            for variant in [
                path.clone(),
                format!("{path}/"),
                format!("/{path}"),
                format!("{path}x"),
                path[..path.len() - 1].to_owned(),
                path.replace("x1", ""),
                path.replace("x1", "a/b"),
                path.replace("x1", "a%2Fb"),
                path.replace("x1", "é"),
                format!("{path}/range"),
            ] {
                paths.push(variant);
            }
        }
        for path in &paths {
            for entry in &ROUTES {
                assert_eq!(
                    entry.matches(path),
                    by_segments(entry.template, path),
                    "{path:?} against {}",
                    entry.template
                );
            }
        }
    }

    #[test]
    fn each_route_is_listed_once_and_its_parameter_is_found() {
        for (index, entry) in ROUTES.iter().enumerate() {
            let twice = ROUTES[index + 1..]
                .iter()
                .any(|later| later.route == entry.route || later.template == entry.template);
            assert!(!twice, "{entry:?} is listed twice");
        }
        assert_eq!(find("/v1/segment/order/range"), Some((2, Some("order"))));
        assert_eq!(find("/v1/segment/order"), Some((1, Some("order"))));
        assert_eq!(find("/api/segment/get/a%20b"), Some((6, Some("a%20b"))));
        assert_eq!(find("/v1/snowflake"), Some((0, None)));
        let listed = listed();
        assert!(listed.starts_with("native: /v1/snowflake, /v1/segment/{tag}, "));
        assert!(listed.ends_with(
            "; operations: /healthz, /readyz, /metrics, /openapi.json, /status, /status.json"
        ));
        let mut items: Vec<&str> = listed
            .split("; ")
            .flat_map(|group| group.split_once(": ").unwrap().1.split(", "))
            .collect();
        let mut templates: Vec<&str> = ROUTES.iter().map(|entry| entry.template).collect();
        items.sort_unstable();
        templates.sort_unstable();
        assert_eq!(items, templates);
    }
}
