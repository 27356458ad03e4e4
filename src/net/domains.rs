//! The domain filter: is a host a command asks the proxy for allowed, denied, or unlisted?
//!
//! A host is canonicalised before it is matched, so that one host has one spelling: names are
//! lower-cased, IDNA-mapped to their ASCII (punycode) form, a trailing dot dropped; IP literals
//! are parsed the way the WHATWG URL standard (and so browsers and `curl`) read them —
//! `2130706433`, `0x7f.1`, `0177.0.0.1` and `127.1` are all 127.0.0.1 — and an IPv6 literal
//! loses its zone id, an IPv4-mapped one becomes the IPv4 address. The proxy then connects to
//! the canonical host it judged, never to the raw text, so no second parser can read the text
//! differently. Control characters, NUL and whitespace are refused.
//!
//! deniedDomains wins over allowedDomains; `*.example.com` matches every subdomain and not
//! `example.com` itself; an empty allowedDomains allows nothing. Pure.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A canonical host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Host {
    /// Lower-case ASCII (punycode), no trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V4(a)) => write!(f, "{a}"),
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
        }
    }
}

impl Host {
    /// The host's own loopback: `localhost`, 127.0.0.1 and ::1 name the same place.
    fn is_loopback_alias(&self) -> bool {
        match self {
            Host::Name(n) => n == "localhost",
            Host::Ip(IpAddr::V4(a)) => *a == Ipv4Addr::LOCALHOST,
            Host::Ip(IpAddr::V6(a)) => *a == Ipv6Addr::LOCALHOST,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostError {
    Empty,
    /// A control character, NUL or whitespace.
    Control,
    /// Not a host name or IP literal; says why.
    Invalid(String),
    BadPort(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::Empty => write!(f, "no host given"),
            HostError::Control => {
                write!(f, "the host holds a control character, NUL or whitespace")
            }
            HostError::Invalid(why) => write!(f, "not a host name or IP address: {why}"),
            HostError::BadPort(p) => write!(f, "{p:?} is not a port (1-65535)"),
        }
    }
}

impl std::error::Error for HostError {}

/// An IPv6 literal (without brackets), its zone id (`%eth0`, `%25eth0`) dropped.
fn parse_v6(text: &str) -> Result<Host, HostError> {
    let address = text.split('%').next().unwrap_or(text);
    let a: Ipv6Addr = address
        .parse()
        .map_err(|e| HostError::Invalid(format!("{text:?}: {e}")))?;
    Ok(Host::Ip(match a.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(a),
    }))
}

/// Canonicalises a host as a client would have meant it (see the module doc).
pub(crate) fn parse_host(raw: &str) -> Result<Host, HostError> {
    if raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(HostError::Control);
    }
    if raw.is_empty() {
        return Err(HostError::Empty);
    }
    // DNS's limit (IDNA itself does not check it); nothing longer is a host.
    if raw.len() > 253 + 2 {
        return Err(HostError::Invalid(format!(
            "a host of {} bytes; DNS names are at most 253",
            raw.len()
        )));
    }
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| HostError::Invalid(format!("{raw:?}: unclosed '['")))?;
        return parse_v6(inner);
    }
    if raw.contains(':') {
        return parse_v6(raw);
    }
    let bare = raw.strip_suffix('.').unwrap_or(raw);
    if bare.is_empty() || bare.ends_with('.') {
        return Err(HostError::Invalid(format!("{raw:?}: empty label")));
    }
    match url::Host::parse(bare).map_err(|e| HostError::Invalid(format!("{raw:?}: {e}")))? {
        url::Host::Domain(d) => {
            let name = d.to_ascii_lowercase();
            // What DNS can hold: letters, digits, '-', '_' and dots (IDNA made it ASCII). The
            // URL standard lets through more ('*', '!', '$', ...), which no host is named.
            match name
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            {
                Some(c) => Err(HostError::Invalid(format!(
                    "{raw:?}: {c:?} cannot be part of a host name"
                ))),
                None => Ok(Host::Name(name)),
            }
        }
        url::Host::Ipv4(a) => Ok(Host::Ip(IpAddr::V4(a))),
        url::Host::Ipv6(a) => Ok(Host::Ip(IpAddr::V6(a))),
    }
}

/// `host[:port]` or `[v6][:port]`, as in a CONNECT request or a Host header.
pub(crate) fn parse_authority(raw: &str) -> Result<(Host, Option<u16>), HostError> {
    let (host, port) = if let Some(rest) = raw.strip_prefix('[') {
        match rest.split_once(']') {
            Some((v6, "")) => (&raw[..v6.len() + 2], None),
            Some((v6, tail)) => match tail.strip_prefix(':') {
                Some(port) => (&raw[..v6.len() + 2], Some(port)),
                None => return Err(HostError::Invalid(format!("{raw:?}: junk after ']'"))),
            },
            None => return Err(HostError::Invalid(format!("{raw:?}: unclosed '['"))),
        }
    } else {
        match raw.rsplit_once(':') {
            // More than one colon without brackets is an IPv6 literal, not host:port.
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            _ => (raw, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|n| *n != 0 && p.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| HostError::BadPort(p.to_string()))?,
        ),
    };
    Ok((parse_host(host)?, port))
}

/// One allowedDomains / deniedDomains entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    /// `*.x`: any subdomain of `x`, not `x`.
    wildcard: bool,
    host: Host,
    /// As written in the config, for messages.
    entry: String,
}

impl Pattern {
    fn parse(entry: &str) -> Result<Pattern, HostError> {
        let (wildcard, rest) = match entry.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, entry),
        };
        let host = parse_host(rest)?;
        if wildcard && !matches!(host, Host::Name(_)) {
            return Err(HostError::Invalid(format!(
                "{entry:?}: a wildcard takes a domain, not an IP address"
            )));
        }
        Ok(Pattern {
            wildcard,
            host,
            entry: entry.to_string(),
        })
    }

    fn matches(&self, host: &Host) -> bool {
        match (&self.host, host) {
            (Host::Name(suffix), Host::Name(name)) if self.wildcard => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            _ if self.wildcard => false,
            (a, b) => a == b || (a.is_loopback_alias() && b.is_loopback_alias()),
        }
    }
}

/// Checks one allowedDomains / deniedDomains entry (`host`, `*.domain`, an IP address).
pub(crate) fn check_entry(entry: &str) -> Result<(), HostError> {
    Pattern::parse(entry).map(|_| ())
}

/// What the filter says about a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Listed in allowedDomains (the entry that matched).
    Allowed(String),
    /// Listed in deniedDomains (the entry): refused, never asked about.
    Denied(String),
    /// In neither list: the user is asked when there is a UI, else refused.
    Unlisted,
}

/// allowedDomains and deniedDomains, compiled.
#[derive(Debug, Clone, Default)]
pub(crate) struct DomainFilter {
    allowed: Vec<Pattern>,
    denied: Vec<Pattern>,
}

/// An entry that is no host pattern: which list, which entry, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryError {
    pub(crate) key: &'static str,
    pub(crate) index: usize,
    pub(crate) error: HostError,
}

impl DomainFilter {
    pub(crate) fn new(allowed: &[String], denied: &[String]) -> Result<DomainFilter, EntryError> {
        let compile = |key: &'static str, list: &[String]| {
            list.iter()
                .enumerate()
                .map(|(index, e)| {
                    Pattern::parse(e).map_err(|error| EntryError { key, index, error })
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(DomainFilter {
            allowed: compile("network.allowedDomains", allowed)?,
            denied: compile("network.deniedDomains", denied)?,
        })
    }

    /// Deny wins; then allow; else unlisted (an empty allow list allows nothing).
    pub(crate) fn decide(&self, host: &Host) -> Verdict {
        if let Some(p) = self.denied.iter().find(|p| p.matches(host)) {
            return Verdict::Denied(p.entry.clone());
        }
        match self.allowed.iter().find(|p| p.matches(host)) {
            Some(p) => Verdict::Allowed(p.entry.clone()),
            None => Verdict::Unlisted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(allowed: &[&str], denied: &[&str]) -> DomainFilter {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        DomainFilter::new(&v(allowed), &v(denied)).unwrap()
    }

    fn decide(f: &DomainFilter, raw: &str) -> Verdict {
        f.decide(&parse_host(raw).unwrap())
    }

    #[test]
    fn wildcards_cover_subdomains_not_the_apex() {
        let f = filter(&["*.github.com", "pypi.org"], &[]);
        assert_eq!(
            decide(&f, "api.github.com"),
            Verdict::Allowed("*.github.com".into())
        );
        assert_eq!(
            decide(&f, "a.b.github.com"),
            Verdict::Allowed("*.github.com".into())
        );
        assert_eq!(decide(&f, "github.com"), Verdict::Unlisted);
        assert_eq!(decide(&f, "evilgithub.com"), Verdict::Unlisted);
        assert_eq!(decide(&f, "github.com.evil.net"), Verdict::Unlisted);
        assert_eq!(decide(&f, "pypi.org"), Verdict::Allowed("pypi.org".into()));
        assert_eq!(decide(&f, "files.pypi.org"), Verdict::Unlisted);
        let both = filter(&["*.example.com", "example.com"], &[]);
        assert!(matches!(decide(&both, "example.com"), Verdict::Allowed(_)));
    }

    #[test]
    fn case_and_a_trailing_dot_do_not_matter() {
        let f = filter(&["Example.COM."], &[]);
        for raw in ["example.com", "EXAMPLE.com", "example.com.", "ExAmPlE.CoM."] {
            assert_eq!(
                decide(&f, raw),
                Verdict::Allowed("Example.COM.".into()),
                "{raw}"
            );
        }
        for bad in ["example.com..", ".", ""] {
            assert!(parse_host(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn deny_wins_and_an_empty_allow_list_allows_nothing() {
        let f = filter(&["*.example.com"], &["secret.example.com"]);
        assert_eq!(
            decide(&f, "SECRET.example.com."),
            Verdict::Denied("secret.example.com".into())
        );
        assert!(matches!(decide(&f, "www.example.com"), Verdict::Allowed(_)));
        let none = filter(&[], &[]);
        for raw in ["example.com", "127.0.0.1", "localhost", "[::1]"] {
            assert_eq!(decide(&none, raw), Verdict::Unlisted, "{raw}");
        }
    }

    #[test]
    fn every_spelling_of_an_ip_is_one_address() {
        let loopback = Host::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        for raw in [
            "127.0.0.1",
            "2130706433",
            "0x7f000001",
            "0x7f.1",
            "0177.0.0.1",
            "0177.0.0.01",
            "127.1",
            "127.0.1",
            "127.0.0.1.",
            "[::ffff:127.0.0.1]",
            "::ffff:7f00:1",
        ] {
            assert_eq!(parse_host(raw).unwrap(), loopback, "{raw}");
        }
        let f = filter(&["10.0.0.1"], &["169.254.169.254"]);
        assert!(matches!(decide(&f, "012.0.0.1"), Verdict::Allowed(_)));
        assert!(matches!(decide(&f, "0xa000001"), Verdict::Allowed(_)));
        // The cloud metadata address, however it is written.
        for raw in [
            "169.254.169.254",
            "0xa9fea9fe",
            "2852039166",
            "0251.0376.0251.0376",
            "169.254.43518",
        ] {
            assert!(matches!(decide(&f, raw), Verdict::Denied(_)), "{raw}");
        }
        for bad in ["1.2.3.4.5", "256.1.1.1", "08.1.1.1", "0x1g.1"] {
            assert!(parse_host(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ipv6_zone_ids_and_forms() {
        let a = parse_host("[fe80::1%eth0]").unwrap();
        assert_eq!(a, parse_host("fe80::1").unwrap());
        assert_eq!(a, parse_host("[FE80:0:0:0:0:0:0:1%25lo]").unwrap());
        assert_eq!(a.to_string(), "[fe80::1]");
        assert!(parse_host("[::1").is_err());
        assert!(parse_host("[zz::1]").is_err());
        let f = filter(&["::1"], &[]);
        assert!(matches!(
            decide(&f, "[0:0:0:0:0:0:0:1]"),
            Verdict::Allowed(_)
        ));
    }

    #[test]
    fn localhost_and_the_loopback_addresses_name_the_same_place() {
        let f = filter(&["localhost"], &[]);
        for raw in ["localhost", "LOCALHOST.", "127.0.0.1", "127.1", "[::1]"] {
            assert!(matches!(decide(&f, raw), Verdict::Allowed(_)), "{raw}");
        }
        assert_eq!(decide(&f, "127.0.0.2"), Verdict::Unlisted);
        assert_eq!(decide(&f, "localhost.evil.com"), Verdict::Unlisted);
        let g = filter(&["127.0.0.1"], &[]);
        assert!(matches!(decide(&g, "localhost"), Verdict::Allowed(_)));
    }

    #[test]
    fn only_characters_a_host_name_can_hold() {
        for bad in [
            "*.example.com",
            "a*b.com",
            "ex!ample.com",
            "a$b.org",
            "a,b.org",
            "a+b.org",
        ] {
            assert!(
                matches!(parse_host(bad), Err(HostError::Invalid(_))),
                "{bad}"
            );
        }
        for ok in ["_dmarc.example.com", "a-b.example", "xn--bcher-kva.de"] {
            assert!(parse_host(ok).is_ok(), "{ok}");
        }
        // The pattern's own `*.` is not part of the host.
        assert!(check_entry("*.example.com").is_ok());
        assert!(check_entry("*.*.example.com").is_err());
    }

    #[test]
    fn control_characters_nul_and_spaces_are_refused() {
        for raw in [
            "exa\0mple.com",
            "example.com\r\nHost: evil",
            "a b.com",
            "example.com\t",
            "\u{7f}x.com",
        ] {
            assert_eq!(parse_host(raw), Err(HostError::Control), "{raw:?}");
        }
    }

    #[test]
    fn idn_hosts_match_their_punycode() {
        let f = filter(&["xn--bcher-kva.de", "*.xn--mnchen-3ya.de"], &[]);
        assert!(matches!(decide(&f, "bücher.de"), Verdict::Allowed(_)));
        assert!(matches!(decide(&f, "BÜCHER.DE."), Verdict::Allowed(_)));
        assert!(matches!(decide(&f, "www.münchen.de"), Verdict::Allowed(_)));
        // A lookalike in another script is another host.
        assert_eq!(decide(&f, "bücher.dе"), Verdict::Unlisted);
        let unicode_entry = filter(&["bücher.de"], &[]);
        assert!(matches!(
            decide(&unicode_entry, "xn--bcher-kva.de"),
            Verdict::Allowed(_)
        ));
    }

    #[test]
    fn authorities_with_ports() {
        let (h, p) = parse_authority("Example.com:443").unwrap();
        assert_eq!((h, p), (Host::Name("example.com".into()), Some(443)));
        assert_eq!(parse_authority("example.com").unwrap().1, None);
        let (h, p) = parse_authority("[::1]:8080").unwrap();
        assert_eq!((h.to_string(), p), ("[::1]".into(), Some(8080)));
        assert_eq!(parse_authority("[::1]").unwrap().1, None);
        assert_eq!(
            parse_authority("::1").unwrap().0,
            parse_host("::1").unwrap()
        );
        assert_eq!(
            parse_authority("0x7f.1:22").unwrap().0.to_string(),
            "127.0.0.1"
        );
        for bad in [
            "example.com:99999",
            "example.com:0",
            "example.com:+80",
            "example.com:",
            ":80",
            "[::1]x",
            "[::1]:http",
        ] {
            assert!(parse_authority(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_entries_name_the_list_and_the_index() {
        let e = DomainFilter::new(&["ok.com".into(), "*.10.0.0.1".into()], &[]).unwrap_err();
        assert_eq!((e.key, e.index), ("network.allowedDomains", 1));
        let e = DomainFilter::new(&[], &["a\0b".into()]).unwrap_err();
        assert_eq!(
            (e.key, e.index, e.error),
            ("network.deniedDomains", 0, HostError::Control)
        );
    }
}
