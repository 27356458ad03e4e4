//! What an address is, for the rules about which addresses a name may lead to: the IPv4
//! address inside the IPv6 forms that carry one, and whether an address is public.

use std::net::IpAddr;

/// The IPv4 address inside an IPv4-mapped, IPv4-compatible or NAT64 (64:ff9b::/96) IPv6
/// address; others as they are.
pub(crate) fn unwrapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => {
            let s = a.segments();
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let o = a.octets();
                return IpAddr::V4(std::net::Ipv4Addr::new(o[12], o[13], o[14], o[15]));
            }
            match a.to_ipv4() {
                // `::` and `::1` are IPv6's own, not IPv4-compatible addresses.
                Some(v4) if !(a.is_unspecified() || a.is_loopback()) => IpAddr::V4(v4),
                _ => ip,
            }
        }
        v4 => v4,
    }
}

/// Whether `ip` is a public unicast address (not loopback, private, shared, link-local,
/// multicast, reserved, documentation or benchmarking).
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match unwrapped(ip) {
        IpAddr::V4(a) => {
            let o = a.octets();
            !(o[0] == 0
                || a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_multicast()
                || a.is_broadcast()
                || a.is_documentation()
                || o[0] >= 240
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (18..20).contains(&o[1])))
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                || s[0] == 0x2001 && s[1] == 0xdb8
                || s[0] == 0x100 && s[1..4] == [0, 0, 0])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses_are_told_from_the_rest() {
        for ip in ["1.1.1.1", "8.8.8.8", "2606:4700::1111", "::ffff:1.1.1.1"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "0.1.2.3",
            "127.0.0.2",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "169.254.1.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::",
            "::1",
            "fe80::1",
            "fd12::1",
            "ff02::1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "::7f00:1",
            "2001:db8::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
