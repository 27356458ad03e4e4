//! `PreparedCommand`: a command `prepareBash` or `prepareRun` made, what to spawn, and the
//! notes after its run.

use std::collections::HashMap;
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Task};
use napi_derive::napi;

use super::errors::*;
use super::objects::*;
use crate::platform::launch::Launch;
use crate::policy::bash::Network;
use crate::session::bash::{finished, prepare_on, Ended, Preparation};
use crate::session::commands::{Commands, Prepared, Ticket};

/// A shell command or argv, prepared: the policy's verdict and, when sandboxed, what to spawn.
/// Spawn `program` with `args` directly (no shell), giving the child `fds` as its fds 3, 4, ...
/// in order (`stdio: ["ignore", "pipe", "pipe", ...fds]`); call `release()` once spawned and
/// `finish()` when the run is over. Made by `Sandbox.prepareBash` and `prepareRun` only.
#[napi]
pub struct PreparedCommand {
    verdict: &'static str,
    reason: Option<String>,
    /// For verdict "ask": what to ask the user.
    ask: Option<crate::session::prompts::Prompt>,
    launch: Option<Launch>,
    /// The session and the ticket of this command's audit (sandboxed commands only).
    audit: Option<(Arc<Commands>, Ticket)>,
}

pub(crate) fn utf8_args(args: &[std::ffi::OsString]) -> napi::Result<Vec<String>, String> {
    args.iter()
        .map(|a| {
            a.to_str()
                .map(str::to_owned)
                .ok_or_else(|| CallError::ArgNotUtf8(a.clone()).into())
        })
        .collect()
}

#[napi]
impl PreparedCommand {
    /// What to do with the command: spawn `program` (`sandboxed`), run it as it is
    /// (`unsandboxed`), ask the user with `prompt` (`ask`), or refuse it with `reason` (`denied`).
    #[napi(getter, catch_unwind, ts_return_type = "CommandVerdict")]
    pub fn verdict(&self) -> String {
        self.verdict.into()
    }

    /// Why it is unsandboxed or denied, for the user and the model.
    #[napi(getter, catch_unwind)]
    pub fn reason(&self) -> Option<String> {
        self.reason.clone()
    }

    /// For verdict "ask" (no OS sandbox, approval mode ask): what to ask the user before
    /// running the command unsandboxed.
    #[napi(getter, catch_unwind, ts_return_type = "CommandPrompt | null")]
    pub fn prompt(&self) -> Option<JsPrompt> {
        self.ask.clone().map(Into::into)
    }

    /// The program to spawn (bwrap or sandbox-exec), when sandboxed.
    #[napi(getter, catch_unwind)]
    pub fn program(&self) -> Option<String> {
        self.launch
            .as_ref()
            .map(|l| l.program.display().to_string())
    }

    /// Its arguments (bwrap's options come on fd 3).
    /// @throws {SandboxError} `E_LAUNCH` when one is not UTF-8 (spawn could not pass it).
    #[napi(getter, catch_unwind)]
    pub fn args(&self) -> napi::Result<Option<Vec<String>>, String> {
        self.launch.as_ref().map(|l| utf8_args(&l.args)).transpose()
    }

    /// Variables of pi's environment the child does not get (see `Sandbox.droppedEnv`):
    /// `childEnv` leaves them out; bwrap unsets them too.
    #[napi(getter, catch_unwind)]
    pub fn unset_env(&self) -> Vec<String> {
        self.launch
            .as_ref()
            .map(|l| l.unset_env.clone())
            .unwrap_or_default()
    }

    /// Environment variables to set in the child's environment (sandbox-exec's proxy
    /// variables; bwrap sets its own), as [name, value] pairs.
    #[napi(getter, catch_unwind)]
    pub fn set_env(&self) -> Vec<Vec<String>> {
        self.launch
            .as_ref()
            .map(|l| {
                l.set_env
                    .iter()
                    .map(|(k, v)| vec![k.clone(), v.clone()])
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The environment to spawn the command with, from `env` (what pi would give a shell):
    /// only the variables the allow-list and `env.allow` keep, less those with a
    /// credential-shaped value or in `env.deny` (see `Sandbox.droppedEnv`), then `setEnv`.
    #[napi(catch_unwind, ts_return_type = "Record<string, string>")]
    pub fn child_env(&self, env: HashMap<String, String>) -> HashMap<String, String> {
        let given: Vec<(String, String)> = env.into_iter().collect();
        let mut kept: HashMap<String, String> = match &self.audit {
            Some((commands, _)) => commands.session().command_env(given),
            // Not a sandboxed command of a session: nothing is known to be safe to pass.
            None => vec![],
        }
        .into_iter()
        .collect();
        if let Some(l) = &self.launch {
            for name in &l.unset_env {
                kept.remove(name);
            }
            kept.extend(l.set_env.iter().cloned());
        }
        kept
    }

    /// All of the sandbox's arguments, options included, for display.
    #[napi(getter, catch_unwind)]
    pub fn shown(&self) -> Option<Vec<String>> {
        self.launch.as_ref().map(|l| {
            l.shown
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        })
    }

    /// The open files the child gets as fds 3, 4, ...; empty once released.
    #[napi(getter, catch_unwind)]
    pub fn fds(&self) -> Vec<i32> {
        use std::os::fd::AsRawFd;
        self.launch
            .as_ref()
            .map(|l| l.fds.iter().map(|f| f.as_raw_fd()).collect())
            .unwrap_or_default()
    }

    /// Empty directories created as mount points for protected names (kept afterwards).
    #[napi(getter, catch_unwind)]
    pub fn placeholders(&self) -> Option<Vec<String>> {
        self.launch.as_ref().map(|l| {
            l.placeholders
                .iter()
                .map(|p| p.display().to_string())
                .collect()
        })
    }

    /// Closes this process's copies of `fds` (the child has its own once spawned).
    #[napi(catch_unwind)]
    pub fn release(&mut self) {
        if let Some(l) = &mut self.launch {
            l.fds.clear();
        }
    }

    /// Stops the run spawned from this launch (`pid`: the spawned child's): SIGKILL to it and
    /// every process descended from it, the sandbox's own first process included (outside the
    /// child's process group; its end ends everything the command started). For abort and
    /// timeout, before the process group is killed.
    #[napi(catch_unwind)]
    pub fn stop(&self, pid: u32) {
        crate::process::kill_tree(pid);
    }

    /// After the run: releases the fds, removes the run's temp files and audits what the
    /// command left on pi's control surface (moved aside). One sentence per finding; empty
    /// when all is well, or when this command was audited already.
    #[napi(catch_unwind)]
    pub fn finish(&mut self) -> Vec<String> {
        let ended = self.discard();
        finished(ended, self.audit.take())
    }

    /// `finish`, with the audit off Node's main thread. Resolves with the same sentences.
    #[napi(ts_return_type = "Promise<Array<string>>")]
    pub fn finish_async(&mut self) -> AsyncTask<AuditTask> {
        let ended = self.discard();
        AsyncTask::new(AuditTask {
            audit: self.audit.take(),
            ended: Some(ended),
        })
    }
}

impl PreparedCommand {
    /// Drops the launch (its fds, its temp files); its socket supervisor and its proxy, if
    /// any, are handed back for what they refused.
    fn discard(&mut self) -> Ended {
        self.launch.take().map(Ended::of).unwrap_or_default()
    }
}

impl Drop for PreparedCommand {
    fn drop(&mut self) {
        // Never finished: its proxy stops now (on macOS it listens on the host).
        if let Some(net) = self.discard().net {
            net.finish();
        }
        // Never finished: the session audits before its next command.
        if let Some((commands, ticket)) = self.audit.take() {
            commands.abandon(ticket);
        }
    }
}

pub struct AuditTask {
    audit: Option<(Arc<Commands>, Ticket)>,
    ended: Option<Ended>,
}

impl Task for AuditTask {
    type Output = Vec<String>;
    type JsValue = Vec<String>;

    fn compute(&mut self) -> napi::Result<Vec<String>> {
        let ticket = self.audit.take();
        let ended = self.ended.take().unwrap_or_default();
        guarded(move || finished(ended, ticket))
    }

    fn resolve(&mut self, _env: napi::Env, output: Vec<String>) -> napi::Result<Vec<String>> {
        Ok(output)
    }
}

pub(crate) fn prepared(
    commands: &Arc<Commands>,
    (p, ticket): (Prepared, Option<Ticket>),
) -> PreparedCommand {
    let mut ask = None;
    let (verdict, reason, launch) = match p {
        Prepared::Unsandboxed(reason) => ("unsandboxed", Some(reason), None),
        Prepared::NeedsApproval(prompt) => {
            let no_ui = prompt.no_ui.clone();
            ask = Some(*prompt);
            ("ask", Some(no_ui), None)
        }
        Prepared::Denied(reason) => ("denied", Some(reason), None),
        Prepared::Sandboxed(launch) => ("sandboxed", None, Some(*launch)),
    };
    PreparedCommand {
        verdict,
        reason,
        ask,
        launch,
        audit: ticket.map(|t| (commands.clone(), t)),
    }
}

pub struct PrepareTask {
    pub(crate) commands: Arc<Commands>,
    pub(crate) what: Preparation,
    pub(crate) network: Option<Network>,
}

impl Task for PrepareTask {
    type Output = (Prepared, Option<Ticket>);
    type JsValue = PreparedCommand;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        guarded(|| prepare_on(&self.commands, &self.what, self.network))
    }

    fn resolve(&mut self, _env: napi::Env, output: Self::Output) -> napi::Result<PreparedCommand> {
        Ok(prepared(&self.commands, output))
    }
}
