//! `Sandbox`'s views for the user and the model: what `/sandbox` shows, what the model is told
//! up front, and `/sandbox stop` (a second `impl` of the class declared in sandbox.rs).

use napi_derive::napi;

use crate::napi::sandbox::{parse_network, Sandbox};

#[napi]
impl Sandbox {
    /// What the model should know before it runs bash: how bash differs inside the sandbox
    /// (writable places, hidden secrets, /tmp, network), a few lines for the system prompt.
    /// Null when the sandbox is off. `network`: the mode asked for (`--sandbox-network`).
    /// @throws {SandboxError} `E_BAD_NETWORK`.
    #[napi(
        catch_unwind,
        ts_args_type = "network?: NetworkMode | undefined | null"
    )]
    pub fn model_brief(&self, network: Option<String>) -> napi::Result<Option<String>, String> {
        let asked = parse_network(network)?;
        Ok(self.commands.session().model_brief(asked))
    }

    /// `/sandbox stop`: ends what this session's commands left running; how many processes ran.
    #[napi(catch_unwind)]
    pub fn stop_background(&self) -> u32 {
        self.commands.session().stop_background() as u32
    }

    /// `/sandbox`: one screen of what holds now (mode, bash's engine and network, where it
    /// may write, what is hidden, grants, the latest refusals). `describe` has every rule.
    /// @throws {SandboxError} `E_BAD_NETWORK`.
    #[napi(
        catch_unwind,
        ts_args_type = "network?: NetworkMode | undefined | null"
    )]
    pub fn summary(&self, network: Option<String>) -> napi::Result<String, String> {
        let asked = parse_network(network)?;
        Ok(self.commands.session().summary(asked))
    }

    /// The effective configuration as text, each value with the file it came from.
    /// `network`: the mode asked for (`--sandbox-network`), to say what bash gets.
    /// @throws {SandboxError} `E_BAD_NETWORK`.
    #[napi(
        catch_unwind,
        ts_args_type = "network?: NetworkMode | undefined | null"
    )]
    pub fn describe(&self, network: Option<String>) -> napi::Result<String, String> {
        let asked = parse_network(network)?;
        Ok(self.commands.session().describe(asked))
    }
}
