//! One sandboxed command at a time per session: prepare → run → audit, tied by a ticket.
//!
//! The audit compares the control surface after a command with the baseline taken when it
//! was prepared. A second command prepared before the first was audited would retake that
//! baseline, and what the first created would count as the user's own: so a session holds
//! at most one outstanding command, and its audit runs only through its own ticket. Shared
//! across threads (prepare and audit run off Node's main thread); every lock here is brief
//! except the session's own, which the slow steps hold without blocking the ticket slot.

use std::sync::{Mutex, MutexGuard};

use crate::platform::launch::Launch;
use crate::session::prompts::Prompt;
use crate::session::Session;
use crate::surface::audit::Finding;

/// Proof that a command was prepared: the one that may be audited next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// `pub`, not `pub(crate)`: an N-API task's output (napi/), which napi-rs declares public.
pub struct Ticket(u64);

/// The outcome of preparing a command.
#[derive(Debug)]
// `pub`, not `pub(crate)`: an N-API task's output (napi/), which napi-rs declares public.
pub enum Prepared {
    Sandboxed(Box<Launch>),
    /// The user turned protection off; run the command as is.
    Unsandboxed(String),
    /// No OS sandbox works: run it unsandboxed only if the user says so now (`prompt`).
    NeedsApproval(Box<Prompt>),
    /// Do not run; the reason says why and how to fix it.
    Denied(String),
}

#[derive(Default)]
struct Slot {
    next: u64,
    /// The command prepared (or being prepared) and not audited yet.
    outstanding: Option<u64>,
    /// A command was dropped without its audit: run it before the next command.
    audit_due: bool,
}

pub(crate) struct Commands {
    session: Mutex<Session>,
    slot: Mutex<Slot>,
    /// What the audit before a command found (left by processes between commands).
    pending: Mutex<Vec<Finding>>,
}

/// A poisoned lock means a panic was caught mid-call; the state it guards is still the last
/// complete one for every field we write in a single step, so go on with it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) const BUSY: &str = "Blocked: the previous sandboxed command of this session has not been audited yet; finish it first (one command at a time).";

impl Commands {
    pub(crate) fn new(session: Session) -> Commands {
        Commands {
            session: Mutex::new(session),
            slot: Mutex::default(),
            pending: Mutex::default(),
        }
    }

    pub(crate) fn session(&self) -> MutexGuard<'_, Session> {
        lock(&self.session)
    }

    /// Prepares a command with `prepare`; a sandboxed one gets the ticket for its audit.
    pub(crate) fn prepare(
        &self,
        prepare: impl FnOnce(&mut Session) -> Prepared,
    ) -> (Prepared, Option<Ticket>) {
        let (id, audit_due) = {
            let mut slot = lock(&self.slot);
            if slot.outstanding.is_some() {
                return (Prepared::Denied(BUSY.into()), None);
            }
            slot.next += 1;
            let id = slot.next;
            slot.outstanding = Some(id);
            (id, std::mem::take(&mut slot.audit_due))
        };
        self.wait_for_index();
        let mut session = self.session();
        if audit_due {
            // An abandoned command's findings are neutralised; blocking ones stay blocking.
            // What processes left running did between commands is said after this one.
            let found = session.audit_after_command();
            lock(&self.pending).extend(found);
        }
        let prepared = prepare(&mut session);
        drop(session);
        if matches!(prepared, Prepared::Sandboxed(_)) {
            (prepared, Some(Ticket(id)))
        } else {
            lock(&self.slot).outstanding = None;
            (prepared, None)
        }
    }

    /// The audit after the ticket's command (with what the audit before it found); empty if
    /// it was audited already.
    pub(crate) fn finish(&self, ticket: Ticket) -> Vec<Finding> {
        if !self.take(ticket) {
            return vec![];
        }
        self.wait_for_index();
        let mut found = std::mem::take(&mut *lock(&self.pending));
        found.extend(self.session().audit_after_command());
        found
    }

    /// Waits for the session's index to be built and the first search for env files to end,
    /// with the session unlocked: meanwhile pi's main thread can still read the mode, the
    /// status and the report.
    fn wait_for_index(&self) {
        let (index, env_search) = {
            let session = self.session();
            (session.index(), session.env_search())
        };
        if let Some(index) = index {
            index.wait_ready();
        }
        if let Some(search) = env_search {
            search.wait_ready();
        }
    }

    /// Processes a command left run on: what they do before the next command is audited
    /// before it (the next baseline would take it for the user's).
    pub(crate) fn audit_before_next(&self) {
        lock(&self.slot).audit_due = true;
    }

    /// pi's session is over: an audit still due (what ran on after a command, which may have
    /// exited since; an abandoned command) is done now, there being no next command.
    pub(crate) fn dispose(&self) {
        let audit_due = std::mem::take(&mut lock(&self.slot).audit_due);
        self.session().dispose(audit_due);
    }

    /// The ticket's command will not be finished (its handle is gone): audit before the next.
    pub(crate) fn abandon(&self, ticket: Ticket) {
        if self.take(ticket) {
            lock(&self.slot).audit_due = true;
        }
    }

    fn take(&self, ticket: Ticket) -> bool {
        let mut slot = lock(&self.slot);
        if slot.outstanding == Some(ticket.0) {
            slot.outstanding = None;
            true
        } else {
            false
        }
    }
}
