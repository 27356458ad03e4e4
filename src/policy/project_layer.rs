//! The project layer as loaded: which file, its content hash, what it would widen, and
//! whether the user trusted it. Types only, below both the config (which carries it) and
//! `trust` (which computes what widens).

use std::path::PathBuf;

use sha2::{Digest, Sha256};

/// One thing the project file would widen, for the trust prompt and `/sandbox`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Widening {
    /// The key, as written in the file (`filesystem.allowWrite`).
    pub(crate) key: &'static str,
    /// What it would do, in the user's words, its names escaped and shortened (`shown`).
    pub(crate) what: String,
    /// How much it opens: the prompt lists the heaviest first.
    pub(crate) weight: Weight,
    /// The same exactly (names as written, paths whole): what the trust key hashes, so
    /// two meanings that look alike once shortened are still two answers.
    pub(crate) meaning: String,
}

/// How much a widening opens, most first: a long list must not push the line that matters
/// off the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Weight {
    /// The sandbox off, or writes reaching the home, `/` or a parent of the project.
    Sweeping,
    /// Other writes outside the project, and hooks that run on the host.
    Outside,
    /// Hosts and unix sockets.
    Reach,
    /// The rest.
    Other,
}

/// How many widenings the trust prompt names; the rest are counted.
pub(crate) const LISTED: usize = 8;

/// The project layer as loaded: which file, its content hash, what it would widen, and
/// whether those widening parts apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProjectLayer {
    pub(crate) file: PathBuf,
    pub(crate) sha256: String,
    pub(crate) widenings: Vec<Widening>,
    pub(crate) trust: Trust,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    /// The user trusted this exact content: everything in it applies.
    Trusted,
    /// The user declined this content: only its tightening parts apply, and pi does not ask
    /// again until the file changes.
    Declined,
    /// Not answered yet (new or changed file): only its tightening parts apply.
    Pending,
}

impl Trust {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Trust::Trusted => "trusted",
            Trust::Declined => "declined",
            Trust::Pending => "not yet trusted",
        }
    }
}

impl ProjectLayer {
    /// Whether the user should be asked about this file now.
    pub(crate) fn needs_answer(&self) -> bool {
        self.trust == Trust::Pending && !self.widenings.is_empty()
    }

    /// Whether the file applies as written (nothing to trust, or trusted): an entry a
    /// grant adds to it holds; otherwise that entry waits for the user's trust.
    pub(crate) fn applies(&self) -> bool {
        self.widenings.is_empty() || self.trust == Trust::Trusted
    }

    /// The widenings, heaviest first (in the file's order within a weight).
    pub(crate) fn by_weight(&self) -> Vec<&Widening> {
        let mut w: Vec<&Widening> = self.widenings.iter().collect();
        w.sort_by_key(|w| w.weight);
        w
    }
}

/// Lowercase hex SHA-256 of `bytes` (project trust is keyed by the file's content hash).
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}
