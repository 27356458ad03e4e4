use super::*;

fn question(withdrawn: bool) -> Question {
    Question {
        host: "example.com".into(),
        port: 443,
        local: false,
        withdrawn: Arc::new(AtomicBool::new(withdrawn)),
    }
}

/// A `Show` that sends each question's id (and prompt) on a channel.
fn shown_on(tx: mpsc::Sender<(u32, Prompt)>) -> Show {
    let tx = Mutex::new(tx);
    Arc::new(move |id, _, prompt| tx.lock().unwrap().send((id, prompt.clone())).is_ok())
}

#[test]
fn an_answer_reaches_the_waiting_connection() {
    let questions = Arc::new(NetworkQuestions::default());
    let (ids, sent) = mpsc::channel();
    questions.set_show(Some(shown_on(ids)));
    let asker = questions.asker();
    let q = question(false);
    let answered = std::thread::spawn(move || asker(&q));
    let (id, _) = sent.recv().unwrap();
    assert!(questions.pending(id));
    let (_, _, tx) = questions.waiting().remove(&id).unwrap();
    tx.send("session".into()).unwrap();
    assert_eq!(answered.join().unwrap(), Reply::ForSession);
    assert!(!questions.pending(id));
}

#[test]
fn a_withdrawn_or_unsent_question_is_refused() {
    let questions = Arc::new(NetworkQuestions::default());
    let q = question(true);
    // Sent, but its command is over: no wait.
    questions.set_show(Some(Arc::new(|_, _, _| true)));
    assert!(matches!(questions.asker()(&q), Reply::Unanswered(_)));
    q.withdrawn.store(false, Ordering::SeqCst);
    // Could not be sent: refused at once.
    questions.set_show(Some(Arc::new(|_, _, _| false)));
    assert!(matches!(questions.asker()(&q), Reply::Unanswered(_)));
    // No one to show it to: refused with how to allow the host in the config files.
    questions.set_show(None);
    questions.set_files(GrantFiles {
        project: "/w/p/.pi/sandbox.json".into(),
        global: "/home/u/.pi/agent/extensions/sandbox.json".into(),
        project_applies: true,
        allowed_in: "network.allowedDomains in /home/u/.pi/agent/extensions/sandbox.json".into(),
    });
    match questions.asker()(&q) {
        Reply::Unanswered(r) => assert!(
            r.contains("no UI") && r.contains("/home/u/.pi/agent/extensions/sandbox.json"),
            "{r}"
        ),
        r => panic!("{r:?}"),
    }
    assert!(questions.waiting().is_empty());
}

#[test]
fn the_prompt_names_the_host_and_offers_every_scope() {
    let questions = Arc::new(NetworkQuestions::default());
    let (ids, sent) = mpsc::channel();
    questions.set_show(Some(shown_on(ids)));
    for (host, local, answer, reply) in [
        ("xn--bcher-kva.de", false, "project", Reply::Saved),
        ("10.0.0.5", true, "noUi", Reply::Unanswered(String::new())),
        // An answer the question did not offer is a refusal.
        ("y.org", false, "once", Reply::Declined(String::new())),
    ] {
        let asker = questions.asker();
        let q = Question {
            host: host.into(),
            port: 8443,
            local,
            withdrawn: Arc::default(),
        };
        let answered = std::thread::spawn(move || asker(&q));
        let (id, prompt) = sent.recv().unwrap();
        let (_, _, tx) = questions.waiting().remove(&id).unwrap();
        tx.send(answer.into()).unwrap();
        let ids: Vec<&str> = prompt.choices.iter().map(|c| c.id.as_str()).collect();
        // The same four as a blocked write's.
        assert_eq!(ids, ["abort", "session", "project", "global"]);
        assert!(prompt.title.contains(host), "{}", prompt.title);
        let here = prompt.title.contains("THIS machine or its local network");
        assert_eq!(here, local, "{}", prompt.title);
        let got = answered.join().unwrap();
        match (&got, &reply) {
            (Reply::Unanswered(r), Reply::Unanswered(_)) => assert_eq!(*r, prompt.no_ui),
            (Reply::Declined(r), Reply::Declined(_)) => assert_eq!(*r, prompt.declined),
            _ => assert_eq!(got, reply),
        }
    }
}
