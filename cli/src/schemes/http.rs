//! Leaf's and Tinyid's routes through `uidgen serve`, over HTTP/1.1 with keep-alive
//! (each thread an agent of its own): one ID a request, and a batch a request.

use super::{Client, Entry, Error, Needs, Place, Scheme, BATCH};

pub(super) fn entries() -> Vec<Entry> {
    let entry = |name, title, ids_per_call, open| Entry {
        name,
        title,
        needs: Needs::Service,
        stores: 1,
        bytes_per_id: 8,
        ids_per_call,
        open: Some(open),
    };
    vec![
        entry(
            "leaf-segment-http",
            "Leaf's segment route through uidgen serve: GET /api/segment/get/TAG",
            1,
            |place: &Place<'_>| open(place, Route::LeafSegment),
        ),
        entry(
            "leaf-snowflake-http",
            "Leaf's snowflake route through uidgen serve: GET /api/snowflake/get/TAG",
            1,
            |place| open(place, Route::LeafSnowflake),
        ),
        entry(
            "tinyid-http",
            "Tinyid's route through uidgen serve, 1000 IDs a request: nextIdSimple?batchSize=1000",
            BATCH,
            |place| open(place, Route::Tinyid),
        ),
    ]
}

#[derive(Clone, Copy)]
enum Route {
    LeafSegment,
    LeafSnowflake,
    Tinyid,
}

struct Service {
    url: String,
    /// `Bearer TOKEN`, where the URL gave a token (Leaf's routes take it as a header).
    authorization: Option<String>,
}

/// `--store http://HOST:PORT[/?token=TOKEN]`: the service, and Tinyid's token where the
/// service asks for one.
fn open(place: &Place<'_>, route: Route) -> Result<Box<dyn Scheme>, Error> {
    let base = place
        .stores
        .first()
        .ok_or("--store http://HOST:PORT (a running uidgen serve) is needed")?;
    let parsed = url::Url::parse(base)
        .map_err(|e| format!("not a service URL ({}): {e}", super::describe(base)))?;
    if parsed.scheme() != "http" {
        return Err(format!(
            "the service URL must be http://HOST:PORT, got {}",
            super::describe(base)
        ));
    }
    let token = parsed
        .query_pairs()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned());
    let authorization = token.as_ref().map(|t| format!("Bearer {t}"));
    // A path segment of . or .. is dropped by URL rules: the request would name no tag.
    if matches!(place.tag, "" | "." | "..") {
        return Err(format!(
            "--tag {:?} cannot be a tag in a URL path",
            place.tag
        ));
    }
    // The tag and token escaped by the URL's own builders: a tag may hold any character.
    let mut url = parsed.clone();
    url.set_query(None);
    let (path, query) = match route {
        Route::LeafSegment => (["api", "segment", "get"], false),
        Route::LeafSnowflake => (["api", "snowflake", "get"], false),
        Route::Tinyid => (["tinyid", "id", "nextIdSimple"], true),
    };
    {
        let mut p = url
            .path_segments_mut()
            .map_err(|()| format!("not a service URL: {}", super::describe(base)))?;
        p.clear().extend(path);
        if !query {
            p.push(place.tag);
        }
    }
    if query {
        let mut q = url.query_pairs_mut();
        q.append_pair("bizType", place.tag)
            .append_pair("batchSize", &BATCH.to_string());
        if let Some(token) = &token {
            q.append_pair("token", token);
        }
    }
    Ok(Box::new(Service {
        url: url.to_string(),
        authorization,
    }))
}

impl Scheme for Service {
    fn client(&self) -> Result<Box<dyn Client>, Error> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(10)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut client = Agent {
            agent,
            url: self.url.clone(),
            authorization: self.authorization.clone(),
        };
        // The first call says at once whether the service and its tag answer.
        client.next(&mut Vec::new())?;
        Ok(Box::new(client))
    }
}

struct Agent {
    agent: ureq::Agent,
    url: String,
    authorization: Option<String>,
}

impl Client for Agent {
    fn next(&mut self, out: &mut Vec<u128>) -> Result<(), Error> {
        let mut request = self.agent.get(&self.url);
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
        }
        let mut response = request.call().map_err(|e| format!("the service: {e}"))?;
        let status = response.status();
        let body = response
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("the service's answer: {e}"))?;
        if !status.is_success() {
            return Err(format!("the service answered {status}: {}", body.trim()));
        }
        for id in body.trim().split(',') {
            let id: u64 = id
                .trim()
                .parse()
                .map_err(|_| format!("the service answered a non-ID: {}", body.trim()))?;
            out.push(u128::from(id));
        }
        Ok(())
    }
}
