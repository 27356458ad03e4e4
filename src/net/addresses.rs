//! What an address is, for the rules about where a name may lead: the IPv4 address inside the
//! IPv6 forms that carry one, whether an address is public, and which place it leads to.
//!
//! Two groups (docs/protection.md, "Which addresses a name may lead to"): `Place::Network`,
//! anything a network reaches (public, private, shared, reserved, documentation,
//! benchmarking): an allowed name leads there wherever its DNS points, since corporate
//! mirrors and split-horizon DNS answer such addresses all the time. `Place::Local`, this
//! machine and its link (loopback, this machine's own addresses on its other interfaces,
//! link-local, cloud metadata services, multicast): what listens there trusts whoever reaches
//! it, so a name leads there only when the address itself is allowed; otherwise an allowed
//! name's DNS (the DNS-rebinding attack) would hand the command the user's local services.
//! The unspecified addresses lead to the loopback and are never connected to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The IPv4 address inside an IPv6 address that carries one, where the network would take
/// the packet there: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`),
/// IPv4-translated (`::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::/96`, and the local-use
/// `64:ff9b:1::/48` read as a /96 prefix) and 6to4 (`2002:AABB:CCDD::/48`). Others as they are.
pub(crate) fn unwrapped(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(a) = ip else {
        return ip;
    };
    let s = a.segments();
    let o = a.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
        || s[..3] == [0x64, 0xff9b, 1]
        || s[..6] == [0, 0, 0, 0, 0xffff, 0]
    {
        return IpAddr::V4(last);
    }
    if s[0] == 0x2002 {
        return IpAddr::V4(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    match a.to_ipv4() {
        // `::` and `::1` are IPv6's own, not IPv4-compatible addresses.
        Some(v4) if !(a.is_unspecified() || a.is_loopback()) => IpAddr::V4(v4),
        _ => ip,
    }
}

/// Where an address leads, for what may lead there (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A network: an allowed name may lead here.
    Network,
    /// This machine or its link: only the address itself, allowed, is reached here.
    Local(Local),
    /// `0.0.0.0/8`, `::`: the kernel takes them for the loopback. Never connected to.
    Unspecified,
}

/// The kinds of `Place::Local`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Local {
    Loopback,
    /// One of this machine's own addresses on another interface: the loopback by another
    /// name for every service bound to all interfaces.
    ThisMachine,
    /// Link-local: the machines on this link, by addresses no router forwards.
    Link,
    /// A cloud provider's metadata service: the machine's credentials, for the asking.
    Metadata,
    /// Multicast or broadcast: no one host; nothing a name legitimately leads to.
    Multicast,
}

impl Local {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Local::Loopback => "this machine's loopback",
            Local::ThisMachine => "an address of this machine itself",
            Local::Link => "a link-local address",
            Local::Metadata => "a cloud metadata service",
            Local::Multicast => "a multicast or broadcast address",
        }
    }
}

/// The metadata services' IPv4 addresses outside 169.254/16 (which is all link-local):
/// Alibaba Cloud's, Oracle Cloud's older one, Azure's WireServer (a public address that
/// hands out the VM's extension settings and certificates).
const METADATA_V4: [Ipv4Addr; 3] = [
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(192, 0, 0, 192),
    Ipv4Addr::new(168, 63, 129, 16),
];

/// Whether an IPv6 address is a metadata service's: AWS's `fd00:ec2::/32` (metadata at
/// `::254`, its DNS and time servers beside it), GCP's `fd20:ce::254`, Oracle Cloud's
/// `fd00:c1::a9fe:a9fe`.
fn is_metadata_v6(a: Ipv6Addr) -> bool {
    let s = a.segments();
    s[..2] == [0xfd00, 0x0ec2]
        || a == Ipv6Addr::new(0xfd20, 0xce, 0, 0, 0, 0, 0, 0x254)
        || a == Ipv6Addr::new(0xfd00, 0xc1, 0, 0, 0, 0, 0xa9fe, 0xa9fe)
}

/// Where `ip` leads, an IPv4 address inside IPv6 judged as itself (`unwrapped`); `own`: this
/// machine's addresses (`own_addresses`).
pub(crate) fn place_on(ip: IpAddr, own: &[IpAddr]) -> Place {
    match place(ip) {
        Place::Network if own.contains(&ip) || own.contains(&unwrapped(ip)) => {
            Place::Local(Local::ThisMachine)
        }
        p => p,
    }
}

/// This machine's addresses, as its interfaces hold them now.
pub(crate) fn own_addresses() -> std::io::Result<Vec<IpAddr>> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below; each entry is read while the list lives.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: a non-null entry of the list getifaddrs returned.
        let entry = unsafe { &*at };
        at = entry.ifa_next;
        if entry.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points at a sockaddr of the family it names.
        match i32::from(unsafe { (*entry.ifa_addr).sa_family }) {
            libc::AF_INET => {
                let a = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in) };
                out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr))));
            }
            libc::AF_INET6 => {
                let a = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in6) };
                out.push(IpAddr::V6(Ipv6Addr::from(a.sin6_addr.s6_addr)));
            }
            _ => {}
        }
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    Ok(out)
}

/// Where `ip` leads, an IPv4 address inside IPv6 judged as itself (`unwrapped`), this
/// machine's own addresses aside (`place_on`).
fn place(ip: IpAddr) -> Place {
    match unwrapped(ip) {
        IpAddr::V4(a) => {
            if a.octets()[0] == 0 {
                Place::Unspecified
            } else if METADATA_V4.contains(&a) || a == Ipv4Addr::new(169, 254, 169, 254) {
                Place::Local(Local::Metadata)
            } else if a.is_loopback() {
                Place::Local(Local::Loopback)
            } else if a.is_link_local() {
                Place::Local(Local::Link)
            } else if a.is_multicast() || a.is_broadcast() {
                Place::Local(Local::Multicast)
            } else {
                Place::Network
            }
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            if a.is_unspecified() {
                Place::Unspecified
            } else if is_metadata_v6(a) {
                Place::Local(Local::Metadata)
            } else if a.is_loopback() {
                Place::Local(Local::Loopback)
            } else if (s[0] & 0xffc0) == 0xfe80 {
                Place::Local(Local::Link)
            } else if a.is_multicast() {
                Place::Local(Local::Multicast)
            } else {
                Place::Network
            }
        }
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

    #[test]
    fn places_split_the_network_from_this_machine_and_its_link() {
        let network = [
            "1.1.1.1",
            "2606:4700::1111",
            // Private, shared, benchmarking, documentation, reserved: corporate mirrors,
            // split-horizon DNS (this very machine's registries answer 203.0.113.80).
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "198.18.0.1",
            "203.0.113.80",
            "192.0.2.2",
            "240.0.0.1",
            "fd00::2",
            "fc00::1",
            "fec0::1",
            "2001:db8::1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ];
        for ip in network {
            assert_eq!(place(ip.parse().unwrap()), Place::Network, "{ip}");
        }
        let local = [
            ("127.0.0.1", Local::Loopback),
            ("127.9.8.7", Local::Loopback),
            ("::1", Local::Loopback),
            ("169.254.1.1", Local::Link),
            ("fe80::1", Local::Link),
            ("febf::1", Local::Link),
            ("169.254.169.254", Local::Metadata),
            ("100.100.100.200", Local::Metadata),
            ("192.0.0.192", Local::Metadata),
            ("168.63.129.16", Local::Metadata),
            ("fd00:ec2::254", Local::Metadata),
            ("fd00:ec2::23", Local::Metadata),
            ("fd20:ce::254", Local::Metadata),
            ("fd00:c1::a9fe:a9fe", Local::Metadata),
            ("224.0.0.1", Local::Multicast),
            ("255.255.255.255", Local::Multicast),
            ("ff02::1", Local::Multicast),
        ];
        for (ip, kind) in local {
            assert_eq!(place(ip.parse().unwrap()), Place::Local(kind), "{ip}");
        }
        for ip in ["0.0.0.0", "0.1.2.3", "::"] {
            assert_eq!(place(ip.parse().unwrap()), Place::Unspecified, "{ip}");
        }
    }

    #[test]
    fn an_ipv4_address_inside_ipv6_is_judged_as_itself() {
        let cases = [
            ("::ffff:127.0.0.1", "127.0.0.1"),
            ("::127.0.0.1", "127.0.0.1"),
            ("::ffff:0:127.0.0.1", "127.0.0.1"),
            ("64:ff9b::127.0.0.1", "127.0.0.1"),
            ("64:ff9b:1::a9fe:a9fe", "169.254.169.254"),
            ("2002:a9fe:a9fe::1", "169.254.169.254"),
            ("2002:7f00:1:5::9", "127.0.0.1"),
            ("::ffff:0.0.0.0", "0.0.0.0"),
        ];
        for (v6, v4) in cases {
            let ip: IpAddr = v6.parse().unwrap();
            assert_eq!(unwrapped(ip), v4.parse::<IpAddr>().unwrap(), "{v6}");
            assert_eq!(place(ip), place(v4.parse().unwrap()), "{v6}");
        }
        // IPv6's own loopback and unspecified addresses are not IPv4-compatible ones.
        for own in ["::1", "::", "2001:db8::1", "fd00:ec2::254"] {
            let ip: IpAddr = own.parse().unwrap();
            assert_eq!(unwrapped(ip), ip, "{own}");
        }
    }

    #[test]
    fn this_machines_own_addresses_are_this_machine() {
        let own = own_addresses().unwrap();
        assert!(own.contains(&"127.0.0.1".parse().unwrap()), "{own:?}");
        let lan: IpAddr = "192.0.2.2".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.2".parse().unwrap();
        for ip in [lan, mapped] {
            assert_eq!(place_on(ip, &[lan]), Place::Local(Local::ThisMachine));
            assert_eq!(place_on(ip, &[]), Place::Network);
        }
        // The loopback stays the loopback, listed or not.
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(place_on(lo, &own), Place::Local(Local::Loopback));
        for ip in &own {
            assert!(matches!(place_on(*ip, &own), Place::Local(_)), "{ip}");
        }
    }
}
