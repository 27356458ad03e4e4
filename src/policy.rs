//! Bash policy: platform capability × sandbox state × mode × network → how a command runs.
//! Pure: capability detection and the sandbox build happen elsewhere.

use crate::config::Mode;
use crate::platform::detect::Capability;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    On,
    Off,
}

impl Network {
    pub fn parse(s: &str) -> Option<Network> {
        match s {
            "on" => Some(Network::On),
            "off" => Some(Network::Off),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    Bwrap,
    Seatbelt,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BashDecision {
    /// Run inside the OS sandbox.
    Sandboxed { adapter: Adapter, network: Network },
    /// Run as is: the user turned protection off (`enabled: false`, yolo, `--no-sandbox`).
    Unsandboxed { reason: String },
    /// Do not run.
    Denied { reason: String },
}

pub struct BashRequest<'a> {
    pub capability: &'a Capability,
    /// `enabled` from the config; false is an explicit user choice.
    pub enabled: bool,
    pub mode: Mode,
    pub network: Network,
}

pub fn decide(req: &BashRequest) -> BashDecision {
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
        // Fail closed: without an OS sandbox bash would run with every right the user has.
        Capability::Unavailable { reason } => BashDecision::Denied {
            reason: format!(
                "Blocked: bash cannot be sandboxed here, so it does not run. {reason} pi's file tools stay guarded meanwhile. To run bash unprotected anyway, choose it explicitly: /sandbox-mode yolo, or start pi with --no-sandbox."
            ),
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
        }
    }

    #[test]
    fn every_combination_has_one_answer() {
        let bwrap = Capability::Bwrap {
            program: "/usr/bin/bwrap".into(),
            features: crate::launch::NO_BWRAP_FEATURES,
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
}
