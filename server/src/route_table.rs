//! The routes the service answers, by template: a leaf that the metrics, the access log
//! and the routes read (no import of the routes themselves).

/// Every route's template, as the duration metric and the access log name it; the last
/// stands for any other path (a 404), so that no path a client makes up becomes a label.
pub(crate) const ROUTE_TEMPLATES: [&str; 17] = [
    "/v1/snowflake",
    "/v1/segment/{tag}",
    "/v1/segment/{tag}/range",
    "/v1/decode/{id}",
    "/v1/opaque/{public}",
    "/api/segment/get/{key}",
    "/api/snowflake/get/{key}",
    "/decodeSnowflakeId",
    "/tinyid/id/nextId",
    "/tinyid/id/nextIdSimple",
    "/tinyid/id/nextSegmentId",
    "/tinyid/id/nextSegmentIdSimple",
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
    "(other)",
];

/// The index in [`ROUTE_TEMPLATES`] of the route that answers `path`, as the router
/// matches it.
pub(crate) fn route_index(path: &str) -> usize {
    let one_segment = |rest: &str| !rest.is_empty() && !rest.contains('/');
    let exact = |template: &str| ROUTE_TEMPLATES.iter().position(|t| *t == template);
    let other = ROUTE_TEMPLATES.len() - 1;
    if let Some(rest) = path.strip_prefix("/v1/segment/") {
        return match rest.strip_suffix("/range") {
            Some(tag) if one_segment(tag) => 2,
            _ if one_segment(rest) => 1,
            _ => other,
        };
    }
    for (prefix, index) in [
        ("/v1/decode/", 3),
        ("/v1/opaque/", 4),
        ("/api/segment/get/", 5),
        ("/api/snowflake/get/", 6),
    ] {
        if let Some(rest) = path.strip_prefix(prefix) {
            return if one_segment(rest) { index } else { other };
        }
    }
    match exact(path) {
        Some(index) if !path.contains('{') && index != other => index,
        _ => other,
    }
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
        for (index, template) in ROUTE_TEMPLATES[..other].iter().enumerate() {
            assert_eq!(route_index(&concrete(template)), index, "{template}");
        }
        for path in [
            "/",
            "/v1/segment/",
            "/v1/segment/a/b",
            "/v1/segment//range",
            "/v1/segment/a/b/range",
            "/api/segment/get/",
            "/api/snowflake/get/a/b",
            "/v1/decode/",
            "/v1/snowflakes",
            "(other)",
            "/metrics/",
        ] {
            assert_eq!(route_index(path), other, "{path}");
        }
    }
}
