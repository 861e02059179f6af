//! Absolute http(s) URLs given by merchants: callback URLs and redirect URIs.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An absolute `http` or `https` URL with a host, no credentials and no fragment, at most 2048
/// characters. Stored in its normalised form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WebUrl(url::Url);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidUrl {
    #[error("must be an absolute http(s) URL")]
    NotAbsoluteHttp,
    #[error("must not contain credentials")]
    Credentials,
    #[error("must not contain a fragment")]
    Fragment,
    #[error("must be at most 2048 characters")]
    TooLong,
    #[error("must use https")]
    NotHttps,
    #[error("must not point to a private, loopback or link-local address")]
    PrivateTarget,
}

impl WebUrl {
    pub fn parse(text: &str) -> Result<Self, InvalidUrl> {
        if text.len() > 2048 {
            return Err(InvalidUrl::TooLong);
        }
        let url = url::Url::parse(text).map_err(|_| InvalidUrl::NotAbsoluteHttp)?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(InvalidUrl::NotAbsoluteHttp);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(InvalidUrl::Credentials);
        }
        if url.fragment().is_some() {
            return Err(InvalidUrl::Fragment);
        }
        Ok(Self(url))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn is_https(&self) -> bool {
        self.0.scheme() == "https"
    }

    pub fn host(&self) -> &str {
        self.0.host_str().unwrap_or_default()
    }

    pub fn port_or_default(&self) -> u16 {
        self.0.port_or_known_default().unwrap_or(443)
    }

    /// Whether the host, as written, is a private, loopback, link-local or otherwise
    /// non-public target (`localhost`, `*.localhost`, `10.0.0.1`, `[::1]`, …). Names that
    /// resolve to such addresses are caught again at delivery time.
    pub fn targets_private_host(&self) -> bool {
        match self.0.host() {
            Some(url::Host::Domain(domain)) => {
                let domain = domain.trim_end_matches('.').to_ascii_lowercase();
                domain == "localhost" || domain.ends_with(".localhost")
            }
            Some(url::Host::Ipv4(ip)) => is_private_ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => is_private_ip(IpAddr::V6(ip)),
            None => true,
        }
    }

    /// Checks the callback policy: https when `require_https`, and no private target unless
    /// `allow_private`.
    pub fn check_target(&self, require_https: bool, allow_private: bool) -> Result<(), InvalidUrl> {
        if require_https && !self.is_https() {
            return Err(InvalidUrl::NotHttps);
        }
        if !allow_private && self.targets_private_host() {
            return Err(InvalidUrl::PrivateTarget);
        }
        Ok(())
    }
}

/// Loopback, private, link-local, unspecified, shared-address, documentation, multicast and
/// broadcast addresses: nothing a public webhook receiver lives on.
pub fn is_private_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_private_v4(v4),
            None => is_private_v6(v6),
        },
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // carrier-grade NAT
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240
}

/// Besides the private IPv6 ranges, the ones that carry an IPv4 address inside — NAT64
/// (`64:ff9b::/96`, `64:ff9b:1::/48`), 6to4 (`2002::/16`), Teredo (`2001::/32`) and the deprecated
/// IPv4-compatible `::a.b.c.d` — are refused whole: each can lead to an internal IPv4 host.
fn is_private_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let first = segments[0];
    let ipv4_compatible = segments[..6].iter().all(|s| *s == 0);
    ipv4_compatible
        || (first == 0x0064 && segments[1] == 0xff9b) // NAT64, well-known and local-use
        || first == 0x2002 // 6to4
        || (first == 0x2001 && segments[1] == 0x0000) // Teredo
        || ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || (first == 0x2001 && ip.segments()[1] == 0x0db8) // documentation
}

impl fmt::Display for WebUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_absolute_http_urls() {
        let url = WebUrl::parse("https://merchant.example/hooks/consent?x=1").unwrap();
        assert!(url.is_https());
        assert_eq!(url.host(), "merchant.example");
        assert!(!url.targets_private_host());
    }

    #[test]
    fn refuses_what_is_not_a_web_url() {
        assert_eq!(WebUrl::parse("/hooks"), Err(InvalidUrl::NotAbsoluteHttp));
        assert_eq!(
            WebUrl::parse("ftp://x.example/"),
            Err(InvalidUrl::NotAbsoluteHttp)
        );
        assert_eq!(
            WebUrl::parse("javascript:alert(1)"),
            Err(InvalidUrl::NotAbsoluteHttp)
        );
        assert_eq!(
            WebUrl::parse("https://u:p@x.example/"),
            Err(InvalidUrl::Credentials)
        );
        assert_eq!(
            WebUrl::parse("https://x.example/#top"),
            Err(InvalidUrl::Fragment)
        );
        assert_eq!(
            WebUrl::parse(&format!("https://x.example/{}", "a".repeat(2048))),
            Err(InvalidUrl::TooLong)
        );
    }

    #[test]
    fn knows_private_targets() {
        for private in [
            "http://localhost:8080/",
            "http://api.localhost/",
            "http://127.0.0.1/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[64:ff9b::808:808]/",
            "http://[64:ff9b:1::a00:1]/",
            "http://[2002:7f00:1::1]/",
            "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "http://[::7f00:1]/",
            "http://[::a00:1]/",
            "http://198.18.0.1/",
            "http://198.19.255.255/",
            "http://2130706433/",
            "http://0x7f000001/",
        ] {
            let url = WebUrl::parse(private).unwrap();
            assert!(url.targets_private_host(), "{private}");
            assert_eq!(
                url.check_target(false, false),
                Err(InvalidUrl::PrivateTarget)
            );
            assert_eq!(url.check_target(false, true), Ok(()));
        }
    }

    #[test]
    fn public_addresses_stay_public() {
        for public in [
            "http://8.8.8.8/",
            "http://198.20.0.1/",
            "http://[2606:4700::1111]/",
            "http://[2001:4860::8888]/",
        ] {
            assert!(
                !WebUrl::parse(public).unwrap().targets_private_host(),
                "{public}"
            );
        }
    }

    #[test]
    fn https_can_be_required() {
        let url = WebUrl::parse("http://merchant.example/").unwrap();
        assert_eq!(url.check_target(true, false), Err(InvalidUrl::NotHttps));
        assert_eq!(url.check_target(false, false), Ok(()));
    }
}
