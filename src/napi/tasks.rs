//! The calls run on libuv's thread pool: a session call, a load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Buffer, Task};
use serde_json::Value;

use super::errors::*;
use super::objects::*;
use crate::paths;
use crate::session::commands::Commands;
use crate::session::Session;

/// One session call on libuv's thread pool. Its errors reject the promise with the same
/// `code` (`E_BLOCKED`, `ENOENT`, ...) the synchronous call throws.
pub struct SessionTask<T> {
    commands: Arc<Commands>,
    call: Option<SessionCall<T>>,
}

pub(crate) type SessionCall<T> = Box<dyn FnOnce(&mut Session) -> napi::Result<T, String> + Send>;

impl<T> SessionTask<T> {
    pub(crate) fn new(
        commands: &Arc<Commands>,
        call: impl FnOnce(&mut Session) -> napi::Result<T, String> + Send + 'static,
    ) -> AsyncTask<SessionTask<T>>
    where
        SessionTask<T>: Task,
    {
        AsyncTask::new(SessionTask {
            commands: commands.clone(),
            call: Some(Box::new(call)),
        })
    }
}

impl<T> Task for SessionTask<T>
where
    T: napi::bindgen_prelude::ToNapiValue + napi::bindgen_prelude::TypeName + Send + 'static,
{
    type Output = Result<T, (String, String)>;
    type JsValue = T;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let call = self.call.take().expect("computed once");
        let commands = self.commands.clone();
        guarded(move || {
            let mut session = commands.session();
            call(&mut session).map_err(|e| (e.status, e.reason))
        })
    }

    fn resolve(&mut self, env: napi::Env, output: Self::Output) -> napi::Result<T> {
        output.map_err(|e| rethrown(env, e))
    }
}

pub(crate) fn absolute(path: &str, cwd: &Path, home: &Path) -> napi::Result<PathBuf, String> {
    paths::expand(path, home, cwd).map_err(|e| CallError::BadPath(e.to_string()).into())
}

/// A path as pi's tools hand it over (absolute already; relative ones against the cwd).
pub(crate) fn session_path(session: &Session, path: &str) -> napi::Result<PathBuf, String> {
    let env = session.env();
    absolute(path, &env.cwd, &env.home)
}

// The session calls behind both the synchronous methods and their `...Async` twins.

pub(crate) fn check_tool_on(
    session: &mut Session,
    tool: &str,
    input: &Value,
) -> Option<JsToolDecision> {
    session.refresh();
    let checked = session.check_tool(tool, input)?;
    let prompt = (checked.decision.verdict == crate::policy::guard::Verdict::Prompt)
        .then(|| session.prompt_for(&checked.decision).into());
    Some(tool_decision(checked, prompt))
}

pub(crate) fn read_file_on(session: &Session, path: &str) -> napi::Result<Buffer, String> {
    let p = session_path(session, path)?;
    session.read_file(&p).map(Into::into).map_err(Into::into)
}

pub(crate) fn write_file_on(
    session: &Session,
    path: &str,
    content: &str,
) -> napi::Result<(), String> {
    let p = session_path(session, path)?;
    session
        .write_file(&p, content.as_bytes())
        .map_err(Into::into)
}

pub(crate) fn access_file_on(
    session: &Session,
    path: &str,
    write: bool,
) -> napi::Result<(), String> {
    let p = session_path(session, path)?;
    session.access_file(&p, write).map_err(Into::into)
}

pub(crate) fn mkdir_on(session: &Session, dir: &str) -> napi::Result<(), String> {
    let p = session_path(session, dir)?;
    session.mkdir(&p).map_err(Into::into)
}

pub(crate) fn tool_decision(
    c: crate::session::tools::ToolCheck,
    prompt: Option<JsPrompt>,
) -> JsToolDecision {
    JsToolDecision {
        decision: c.decision.into(),
        patch: (!c.patch.is_empty()).then(|| c.patch.into_iter().collect()),
        prompt,
    }
}
