//! What a session's commands leave running: the pods they run in (`platform::linux::pod`),
//! one per network mode, started with the first command that needs one and ended with the
//! session (or `/sandbox stop`). A filtered pod's proxy door is served here for the session.
//!
//! Where no pod can be made (a kernel that refuses the nesting, say), commands run on their
//! own as before, and what they leave dies with them; the reason is said once.

use std::sync::Arc;

use crate::net::gate::{CommandNet, Gate, SessionDoor};
use crate::policy::bash::Network;

#[cfg(target_os = "linux")]
pub(crate) use crate::platform::linux::pod::Background;
#[cfg(target_os = "linux")]
use crate::platform::linux::pod::{Pod, PodProgram};

/// A process a command left running (no pods outside Linux: never any).
#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Background {
    pub(crate) pid: u32,
    pub(crate) command: String,
}

#[derive(Default)]
pub(crate) struct Servers {
    #[cfg(target_os = "linux")]
    pods: Vec<(Pod, Option<SessionDoor>)>,
    /// Why the last pod could not be started (said in the next command's notes, once).
    failed: Option<String>,
    /// The failure was said.
    said: bool,
    /// What ran after the last command: a process new after the next one is its.
    known: Vec<u32>,
}

impl Servers {
    /// The pod for `network`, started now if there is none (or it died); None where none can
    /// be made (`failure` says why).
    #[cfg(target_os = "linux")]
    pub(crate) fn pod_for(
        &mut self,
        network: Network,
        bwrap: &std::path::Path,
        gate: &Arc<Gate>,
    ) -> Option<&Pod> {
        self.pods.retain_mut(|(pod, _)| pod.alive());
        if let Some(i) = self.pods.iter().position(|(p, _)| p.network() == network) {
            return Some(&self.pods[i].0);
        }
        match start(network, bwrap, gate) {
            Ok(started) => {
                self.failed = None;
                self.pods.push(started);
                self.pods.last().map(|(p, _)| p)
            }
            Err(why) => {
                self.failed = Some(why);
                None
            }
        }
    }

    /// A command's connections go through its pod's door from now on.
    pub(crate) fn attach(&self, network: Network, net: &Arc<CommandNet>) {
        #[cfg(target_os = "linux")]
        for (pod, door) in &self.pods {
            if let (true, Some(door)) = (pod.network() == network, door) {
                door.attach(net.clone());
            }
        }
        let _ = (network, net);
    }

    /// After a command: the processes that run now and did not after the one before, and
    /// whether any runs.
    pub(crate) fn left_running(&mut self) -> (Vec<Background>, bool) {
        let now = self.background();
        let new = now
            .iter()
            .filter(|b| !self.known.contains(&b.pid))
            .cloned()
            .collect();
        self.known = now.iter().map(|b| b.pid).collect();
        (new, !now.is_empty())
    }

    /// What commands left running, in every pod.
    pub(crate) fn background(&self) -> Vec<Background> {
        #[cfg(target_os = "linux")]
        return self.pods.iter().flat_map(|(p, _)| p.background()).collect();
        #[cfg(not(target_os = "linux"))]
        vec![]
    }

    /// Ends every pod and what runs in it; how many processes were running.
    pub(crate) fn stop(&mut self) -> usize {
        let running = self.background().len();
        #[cfg(target_os = "linux")]
        self.pods.clear();
        self.known.clear();
        running
    }

    /// Why background processes do not outlive commands, the first time after it happened.
    pub(crate) fn failure_note(&mut self) -> Option<String> {
        if self.said {
            return None;
        }
        let why = self.failed.as_ref()?;
        self.said = true;
        Some(format!(
            "Processes this session's commands leave running stop when their command ends: the sandbox could not set up the namespaces they would share ({why})."
        ))
    }
}

#[cfg(target_os = "linux")]
fn start(
    network: Network,
    bwrap: &std::path::Path,
    gate: &Arc<Gate>,
) -> Result<(Pod, Option<SessionDoor>), String> {
    let (init, init_fd) =
        crate::platform::linux::launch::init_to_run().map_err(|e| e.to_string())?;
    let init = match &init_fd {
        Some(fd) => {
            use std::os::fd::AsRawFd;
            format!("/proc/self/fd/{}", fd.as_raw_fd()).into()
        }
        None => init.into_os_string(),
    };
    let program = PodProgram {
        bwrap,
        init,
        init_fd,
    };
    let (pod, door) = Pod::start(program, network).map_err(|e| e.to_string())?;
    let door = match door {
        Some(listener) => {
            Some(SessionDoor::serve(gate.clone(), listener).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    Ok((pod, door))
}

/// The note after a command that left processes running: which, and how long they live.
pub(crate) fn left_running_note(left: &[Background]) -> Option<String> {
    const SHOWN: usize = 3;
    if left.is_empty() {
        return None;
    }
    let mut named: Vec<String> = left
        .iter()
        .take(SHOWN)
        .map(|b| format!("{} (host pid {})", crate::shown::text(&b.command), b.pid))
        .collect();
    if left.len() > SHOWN {
        named.push(format!("{} more", left.len() - SHOWN));
    }
    let what = if left.len() == 1 { "keeps" } else { "keep" };
    Some(format!(
        "Still running in the sandbox: {} {what} running for this session; later commands reach servers on 127.0.0.1 and localhost. They stop when the session ends, or with /sandbox stop.",
        named.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bg(pid: u32, command: &str) -> Background {
        Background {
            pid,
            command: command.into(),
        }
    }

    #[test]
    fn the_note_names_what_runs_and_how_long() {
        assert_eq!(left_running_note(&[]), None);
        let one = left_running_note(&[bg(7, "python3 -m http.server 8000")]).unwrap();
        assert!(
            one.contains("python3 -m http.server 8000 (host pid 7) keeps running"),
            "{one}"
        );
        assert!(
            one.contains("127.0.0.1") && one.contains("/sandbox stop"),
            "{one}"
        );
        let many: Vec<Background> = (1..=5).map(|i| bg(i, &format!("node s{i}.js"))).collect();
        let note = left_running_note(&many).unwrap();
        assert!(
            note.contains("node s3.js (host pid 3), 2 more keep running"),
            "{note}"
        );
        assert!(!note.contains("s4.js"), "{note}");
    }

    #[test]
    fn a_command_line_cannot_draw_on_the_screen() {
        let note = left_running_note(&[bg(9, "evil\u{1b}[2J\nAllow? y")]).unwrap();
        assert!(!note.contains('\u{1b}') && !note.contains('\n'), "{note:?}");
    }
}
