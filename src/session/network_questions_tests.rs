use super::*;

#[test]
fn an_answer_reaches_the_waiting_connection() {
    let questions = Arc::new(NetworkQuestions::default());
    let (ids, sent) = mpsc::channel();
    let asker = questions.asker(move |id, _| ids.send(id).is_ok());
    let q = Question {
        host: "example.com".into(),
        port: 443,
        prompt: crate::session::prompts::unsandboxed_command("x", "y"),
        withdrawn: Arc::default(),
    };
    let answered = std::thread::spawn(move || asker(&q));
    let id = sent.recv().unwrap();
    assert!(questions.pending(id));
    let (_, _, tx) = questions.waiting().remove(&id).unwrap();
    tx.send("session".into()).unwrap();
    assert_eq!(answered.join().unwrap().as_deref(), Some("session"));
    assert!(!questions.pending(id));
}

#[test]
fn a_withdrawn_or_unsent_question_is_refused() {
    let questions = Arc::new(NetworkQuestions::default());
    let q = Question {
        host: "example.com".into(),
        port: 443,
        prompt: crate::session::prompts::unsandboxed_command("x", "y"),
        withdrawn: Arc::new(AtomicBool::new(true)),
    };
    // Sent, but its command is over: no wait.
    assert_eq!(questions.asker(|_, _| true)(&q), None);
    q.withdrawn.store(false, Ordering::SeqCst);
    // Could not be sent: refused at once.
    assert_eq!(questions.asker(|_, _| false)(&q), None);
    assert!(questions.waiting().is_empty());
}
