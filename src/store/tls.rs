//! TLS to the network stores (rustls with ring): a client configuration for what the
//! URL asked (`store::url::Tls`), and the TLS failure inside a driver's error.

// The client configuration is built here for PostgreSQL; MySQL's and Redis' drivers
// build their own from the same URL parameters (on the provider installed here).
#![cfg_attr(not(feature = "postgres"), allow(dead_code))]
use super::net::{Tls, Verify};
use super::Cause;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Makes ring the process's rustls provider, unless one is set: a driver that builds its
/// own configuration (Redis) needs one, and with two providers compiled in (another
/// crate may bring aws-lc-rs) rustls would not choose.
#[cfg_attr(
    not(any(feature = "mysql", feature = "redis", feature = "zookeeper")),
    allow(dead_code)
)]
pub(crate) fn install_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The certificates trusted: the CA file alone when the URL names one (as the engines'
/// own clients do), else this system's.
fn roots(tls: &Tls) -> Result<rustls::RootCertStore, Cause> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match &tls.ca {
        Some(path) => {
            for cert in CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("cannot read the CA file {}: {e}", path.display()))?
            {
                let cert = cert.map_err(|e| format!("the CA file {}: {e}", path.display()))?;
                roots.add(cert)?;
            }
            if roots.is_empty() {
                return Err(format!("the CA file {} holds no certificate", path.display()).into());
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    Ok(roots)
}

/// A client configuration that checks what `tls.verify` says: the chain and the host
/// name (`Full`), the chain only (`Chain`), or nothing but encryption (`Encrypt`).
pub(crate) fn client_config(tls: &Tls) -> Result<rustls::ClientConfig, Cause> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let config = match tls.verify {
        Verify::Full => builder.with_root_certificates(roots(tls)?),
        Verify::Chain | Verify::Encrypt | Verify::Off => {
            let chain = if tls.verify == Verify::Chain {
                Some(
                    WebPkiServerVerifier::builder_with_provider(
                        Arc::new(roots(tls)?),
                        provider.clone(),
                    )
                    .build()?,
                )
            } else {
                None
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Lenient { chain, provider }))
        }
    };
    Ok(config.with_no_client_auth())
}

/// Checks the chain but not the host name (`chain` set), or nothing (`require`).
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The rustls error somewhere in `err`'s chain (an `io::Error` wrapping it included), in
/// words: why a handshake failed.
pub(crate) fn failure(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        // Redis keeps its cause in an `Arc`, whose `source` skips the error it holds.
        if let Some(held) = err.downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>() {
            if let Some(found) = failure(held.as_ref()) {
                return Some(found);
            }
        }
        // `io::Error::source` skips the error it wraps.
        if let Some(inner) = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            if let Some(found) = failure(inner) {
                return Some(found);
            }
        }
        next = err.source();
    }
    None
}

/// Why a TLS handshake with `host:port`, checked as `tls` says, fails; `None` when it
/// succeeds or never gets as far as TLS. For a driver that keeps the reason to itself
/// (ZooKeeper's client only logs it). Each step within `timeout`.
#[cfg_attr(not(feature = "zookeeper"), allow(dead_code))]
pub(crate) fn handshake_failure(
    store: &'static str,
    host: &str,
    port: u16,
    tls: &Tls,
    timeout: std::time::Duration,
) -> Option<String> {
    let config = match client_config(tls) {
        Ok(config) => Arc::new(config),
        Err(e) => return Some(e.to_string()),
    };
    let name = ServerName::try_from(host.trim_matches(['[', ']']).to_owned()).ok()?;
    let address = super::net::resolve(store, host, port, timeout).ok()?;
    let mut socket = std::net::TcpStream::connect_timeout(&address, timeout).ok()?;
    socket.set_read_timeout(Some(timeout)).ok()?;
    socket.set_write_timeout(Some(timeout)).ok()?;
    let mut connection = rustls::ClientConnection::new(config, name).ok()?;
    while connection.is_handshaking() {
        if let Err(e) = connection.complete_io(&mut socket) {
            return failure(&e);
        }
    }
    None
}
