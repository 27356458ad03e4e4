//! The network gate's questions worded as prompts and handed to whoever asks the user (pi's
//! dialog, through JS), and the answers back: a connection waits for its answer, its
//! command's end, or a timeout.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use super::commands::Commands;
use super::grants::WriteScope;
use super::prompts::{self, GrantFiles, Prompt};
use crate::net::gate::{Asker, Question, Reply};
use crate::shown;

/// Questions of the network gate sent to JS and not answered yet, by id: the host asked
/// about, and where the answer goes.
#[derive(Default)]
pub(crate) struct NetworkQuestions {
    next: AtomicU32,
    waiting: Mutex<Waiting>,
    /// Where "for this project" and "for all projects" write, named by the prompts: set
    /// with each load of the gate's rules.
    files: RwLock<GrantFiles>,
    /// Who shows the questions (None: no one; unlisted hosts are refused).
    show: RwLock<Option<Show>>,
}

/// Shows the question `id` with its prompt to the user; false when it could not be sent
/// (then the host is refused).
pub(crate) type Show = Arc<dyn Fn(u32, &Question, &Prompt) -> bool + Send + Sync>;

/// By question id: the host, whether its command is over, where the answer goes.
type Waiting = HashMap<u32, (String, Arc<AtomicBool>, Sender<String>)>;

/// How long a connection waits for the user's answer before it is refused.
const NETWORK_ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// How often a waiting connection looks whether its command is over.
const WITHDRAWN_POLL: Duration = Duration::from_millis(100);

impl NetworkQuestions {
    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The config files the prompts name from now on.
    pub(crate) fn set_files(&self, files: GrantFiles) {
        *self.files.write().unwrap_or_else(|e| e.into_inner()) = files;
    }

    /// Who shows the questions from now on (None: no one).
    pub(crate) fn set_show(&self, show: Option<Show>) {
        *self.show.write().unwrap_or_else(|e| e.into_inner()) = show;
    }

    /// The gate's asker: each question is worded as a prompt, gets an id and goes to the
    /// `show` set; the connection then waits for `answer`.
    pub(crate) fn asker(self: &Arc<Self>) -> Asker {
        let questions = self.clone();
        Arc::new(move |q: &Question| questions.ask(q))
    }

    fn ask(&self, q: &Question) -> Reply {
        let prompt = {
            let files = self.files.read().unwrap_or_else(|e| e.into_inner());
            prompts::network_host(&q.host, q.port, q.local, &files)
        };
        let show = self.show.read().unwrap_or_else(|e| e.into_inner()).clone();
        let answer = show.and_then(|show| self.shown_and_answered(q, &prompt, &show));
        match answer.as_deref() {
            None | Some("noUi") => Reply::Unanswered(prompt.no_ui),
            // "project" / "global": the config file holds the host now (grantDomain).
            Some("project" | "global") => Reply::Saved,
            Some("session") => Reply::ForSession,
            Some(_) => Reply::Declined(prompt.declined),
        }
    }

    /// Shows the question with an id and waits for its answer (None: it could not be sent,
    /// or no answer came).
    fn shown_and_answered(&self, q: &Question, prompt: &Prompt, show: &Show) -> Option<String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.waiting()
            .insert(id, (q.host.clone(), q.withdrawn.clone(), tx));
        let answer = if show(id, q, prompt) {
            wait_for_answer(&rx, &q.withdrawn)
        } else {
            None
        };
        self.waiting().remove(&id);
        answer
    }

    /// Whether the question `id` still waits for its answer.
    pub(crate) fn pending(&self, id: u32) -> bool {
        self.waiting().contains_key(&id)
    }

    /// The user's answer to the question `id`: "project" and "global" are written into that
    /// config file (`Session::grant_domain`); the waiting connection gets the answer. Returns
    /// a sentence for the user when the answer stored something (or could not). An id no
    /// longer waited for is ignored.
    pub(crate) fn answer(&self, id: u32, answer: String, commands: &Commands) -> Option<String> {
        let (host, withdrawn, tx) = self.waiting().remove(&id)?;
        let said = match WriteScope::parse(&answer) {
            Some(scope @ (WriteScope::Project | WriteScope::Global))
                if !withdrawn.load(Ordering::SeqCst) =>
            {
                let mut session = commands.session();
                // The command may have ended while the lock was awaited: then nothing.
                if withdrawn.load(Ordering::SeqCst) {
                    return None;
                }
                Some(match session.grant_domain(&host, scope) {
                    Ok(s) => s,
                    Err(e) => format!(
                        "{e}; {} is allowed for this command only",
                        shown::name(&host)
                    ),
                })
            }
            _ => None,
        };
        let _ = tx.send(answer);
        said
    }
}

/// The answer sent on `rx`; None when the command is over (`withdrawn`) or the wait timed out.
fn wait_for_answer(rx: &mpsc::Receiver<String>, withdrawn: &AtomicBool) -> Option<String> {
    let until = Instant::now() + NETWORK_ANSWER_TIMEOUT;
    while !withdrawn.load(Ordering::SeqCst) && Instant::now() < until {
        match rx.recv_timeout(WITHDRAWN_POLL) {
            Ok(a) => return Some(a),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    None
}

#[cfg(test)]
#[path = "network_questions_tests.rs"]
mod tests;
