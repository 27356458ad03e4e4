//! The network gate's questions handed to whoever asks the user (pi's dialog, through JS),
//! and the answers back: a connection waits for its answer, its command's end, or a timeout.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::commands::Commands;
use super::grants::WriteScope;
use crate::net::gate::{Asker, Question};
use crate::shown;

/// Questions of the network gate sent to JS and not answered yet, by id: the host asked
/// about, and where the answer goes.
#[derive(Default)]
pub(crate) struct NetworkQuestions {
    next: AtomicU32,
    waiting: Mutex<Waiting>,
}

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

    /// The gate's asker: each question gets an id and goes to `send` (false: it could not
    /// be sent, and the host is refused); the connection then waits for `answer`.
    pub(crate) fn asker(
        self: &Arc<Self>,
        send: impl Fn(u32, &Question) -> bool + Send + Sync + 'static,
    ) -> Asker {
        let questions = self.clone();
        Arc::new(move |q: &Question| {
            let id = questions.next.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = mpsc::channel();
            questions
                .waiting()
                .insert(id, (q.host.clone(), q.withdrawn.clone(), tx));
            let answer = if send(id, q) {
                wait_for_answer(&rx, &q.withdrawn)
            } else {
                None
            };
            questions.waiting().remove(&id);
            answer.filter(|a| a != "noUi")
        })
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
