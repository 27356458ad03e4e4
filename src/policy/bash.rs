//! Bash policy: platform capability × sandbox state × mode × network → how a command runs.
//! Pure: capability detection and the sandbox build happen elsewhere.

use std::path::PathBuf;

use crate::policy::config::Mode;
use crate::policy::guard::ApprovalMode;

/// What bwrap itself can do beyond its basics, probed once (`platform::detect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// `--disable-userns` (bubblewrap 0.8+): no new user namespaces inside, enforced by the
    /// kernel's namespace limit as well as by the seccomp filter.
    pub(crate) disable_userns: bool,
}

/// Which OS sandbox works here, as `platform::detect` finds it; owned here, where it is
/// decided on, so that the policy needs nothing of the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
// `pub`, not `pub(crate)`: an N-API task's output (napi/), which napi-rs declares public.
pub enum Capability {
    Bwrap {
        program: PathBuf,
        features: Features,
    },
    SandboxExec {
        program: PathBuf,
    },
    /// No working sandbox; `reason` says why and how to fix it.
    Unavailable {
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Network {
    /// The host's network, unfiltered: an explicit user choice.
    On,
    /// No network: an empty network namespace.
    Off,
    /// An empty network namespace whose one way out is the session's proxy, which lets
    /// through the hosts network.allowedDomains (or the user) allows.
    Filtered,
}

impl Network {
    pub(crate) fn parse(s: &str) -> Option<Network> {
        match s {
            "on" => Some(Network::On),
            "off" => Some(Network::Off),
            "filtered" => Some(Network::Filtered),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Network::On => "on",
            Network::Off => "off",
            Network::Filtered => "filtered",
        }
    }

    /// Whether the command gets a network namespace of its own (no host interface in it).
    pub(crate) fn own_namespace(self) -> bool {
        self != Network::On
    }

    /// The mode when the user asked for none (`--sandbox-network` unset): filtered when the
    /// config lists domains, else off. Never on: that takes an explicit choice.
    pub(crate) fn default_for(lists_domains: bool) -> Network {
        if lists_domains {
            Network::Filtered
        } else {
            Network::Off
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adapter {
    Bwrap,
    Seatbelt,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BashDecision {
    /// Run inside the OS sandbox.
    Sandboxed { adapter: Adapter, network: Network },
    /// Run as is: the user turned protection off (`enabled: false`, yolo, `--no-sandbox`).
    Unsandboxed { reason: String },
    /// Run unsandboxed only if the user says so now (no OS sandbox, approval mode `ask`);
    /// `reason` says why no sandbox works.
    NeedsApproval { reason: String },
    /// Do not run.
    Denied { reason: String },
}

pub(crate) struct BashRequest<'a> {
    pub(crate) capability: &'a Capability,
    /// `enabled` from the config; false is an explicit user choice.
    pub(crate) enabled: bool,
    pub(crate) mode: Mode,
    pub(crate) network: Network,
    /// `PI_SANDBOX_APPROVAL_MODE`: what happens when no OS sandbox works.
    pub(crate) approval: ApprovalMode,
    /// How the user already allowed this command to run unsandboxed, if they did.
    pub(crate) approved: Option<String>,
}

pub(crate) fn decide(req: &BashRequest) -> BashDecision {
    if !req.enabled {
        return BashDecision::Unsandboxed {
            reason: "the sandbox is disabled in the config (enabled: false)".into(),
        };
    }
    if req.mode == Mode::Yolo {
        return BashDecision::Unsandboxed {
            reason: "sandbox mode is yolo".into(),
        };
    }
    match req.capability {
        Capability::Bwrap { .. } => BashDecision::Sandboxed {
            adapter: Adapter::Bwrap,
            network: req.network,
        },
        Capability::SandboxExec { .. } => BashDecision::Sandboxed {
            adapter: Adapter::Seatbelt,
            network: req.network,
        },
        // Without an OS sandbox bash would run with every right the user has: only the user
        // can let it (seed 000's fallback), and only for what they approved.
        Capability::Unavailable { reason } => match (req.approval, &req.approved) {
            (ApprovalMode::Deny, _) => BashDecision::Denied {
                reason: format!(
                    "Blocked: bash cannot be sandboxed here, and PI_SANDBOX_APPROVAL_MODE=deny refuses to run it unsandboxed. {reason} pi's file tools stay guarded meanwhile. To run bash unprotected anyway, unset PI_SANDBOX_APPROVAL_MODE to be asked, or choose /sandbox-mode yolo or --no-sandbox."
                ),
            },
            (ApprovalMode::Always, _) => BashDecision::Unsandboxed {
                reason: format!(
                    "no OS sandbox works here and PI_SANDBOX_APPROVAL_MODE=always runs bash without one. {reason}"
                ),
            },
            (ApprovalMode::Ask, Some(how)) => BashDecision::Unsandboxed {
                reason: format!("no OS sandbox works here; {how}"),
            },
            (ApprovalMode::Ask, None) => BashDecision::NeedsApproval {
                reason: reason.clone(),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(capability: &Capability, enabled: bool, mode: Mode) -> BashRequest<'_> {
        BashRequest {
            capability,
            enabled,
            mode,
            network: Network::Off,
            approval: ApprovalMode::Deny,
            approved: None,
        }
    }

    #[test]
    fn every_combination_has_one_answer() {
        let bwrap = Capability::Bwrap {
            program: "/usr/bin/bwrap".into(),
            features: Features {
                disable_userns: false,
            },
        };
        let seatbelt = Capability::SandboxExec {
            program: "/usr/bin/sandbox-exec".into(),
        };
        let none = Capability::Unavailable {
            reason: "bwrap missing.".into(),
        };
        for mode in [Mode::ReadOnly, Mode::ReadWrite] {
            assert_eq!(
                decide(&req(&bwrap, true, mode)),
                BashDecision::Sandboxed {
                    adapter: Adapter::Bwrap,
                    network: Network::Off
                }
            );
            assert_eq!(
                decide(&req(&seatbelt, true, mode)),
                BashDecision::Sandboxed {
                    adapter: Adapter::Seatbelt,
                    network: Network::Off
                }
            );
            match decide(&req(&none, true, mode)) {
                BashDecision::Denied { reason } => {
                    assert!(reason.contains("bwrap missing."), "{reason}");
                    assert!(reason.contains("--no-sandbox"), "{reason}");
                }
                other => panic!("expected denied, got {other:?}"),
            }
        }
        for cap in [&bwrap, &seatbelt, &none] {
            assert!(matches!(
                decide(&req(cap, false, Mode::ReadWrite)),
                BashDecision::Unsandboxed { .. }
            ));
            assert!(matches!(
                decide(&req(cap, true, Mode::Yolo)),
                BashDecision::Unsandboxed { .. }
            ));
        }
        // Without a sandbox, the approval mode decides; a grant only counts in `ask`.
        let mut r = req(&none, true, Mode::ReadWrite);
        r.approval = ApprovalMode::Ask;
        assert_eq!(
            decide(&r),
            BashDecision::NeedsApproval {
                reason: "bwrap missing.".into()
            }
        );
        r.approved = Some("allowed for this session".into());
        assert!(matches!(decide(&r), BashDecision::Unsandboxed { .. }));
        r.approval = ApprovalMode::Deny;
        assert!(matches!(decide(&r), BashDecision::Denied { .. }));
        r.approval = ApprovalMode::Always;
        r.approved = None;
        assert!(matches!(decide(&r), BashDecision::Unsandboxed { .. }));
        // With a sandbox, neither changes anything.
        let mut r = req(&bwrap, true, Mode::ReadWrite);
        r.approval = ApprovalMode::Always;
        r.approved = Some("x".into());
        assert!(matches!(decide(&r), BashDecision::Sandboxed { .. }));
        let mut r = req(&bwrap, true, Mode::ReadWrite);
        r.network = Network::On;
        assert_eq!(
            decide(&r),
            BashDecision::Sandboxed {
                adapter: Adapter::Bwrap,
                network: Network::On
            }
        );
    }

    #[test]
    fn network_modes_parse_and_default_to_filtered_only_when_domains_are_listed() {
        for n in [Network::On, Network::Off, Network::Filtered] {
            assert_eq!(Network::parse(n.name()), Some(n));
        }
        assert_eq!(Network::parse("ON"), None);
        assert_eq!(Network::default_for(true), Network::Filtered);
        assert_eq!(Network::default_for(false), Network::Off);
        assert!(Network::Filtered.own_namespace() && Network::Off.own_namespace());
        assert!(!Network::On.own_namespace());
    }
}
