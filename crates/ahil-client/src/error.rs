//! What can go wrong between a test and the server (a refusal by the gate is an [`Envelope`], not
//! an error).

use std::path::PathBuf;
use std::time::Duration;

use crate::Envelope;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("agentic-hil is not on PATH; install it or set AGENTIC_HIL_BIN to the binary")]
    BinaryNotFound,
    #[error("{}: cannot start: {source}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    /// The server ended; `refusal` is the document it printed on stderr (an invalid configuration).
    #[error("agentic-hil mcp-stdio exited{}", exit_detail(*code, refusal.as_ref()))]
    Exited {
        code: Option<i32>,
        refusal: Option<Envelope>,
    },
    #[error("{method}: no answer within {after:?}")]
    Timeout { method: String, after: Duration },
    #[error("{method}: JSON-RPC error {code}: {message}")]
    Rpc {
        method: String,
        code: i64,
        message: String,
    },
    #[error("{0}")]
    Protocol(String),
    #[error("writing to the server: {0}")]
    Io(#[from] std::io::Error),
    /// Sessions whose stop was refused, unanswered or left cleanup pending, one line each.
    #[error("cleanup not confirmed: {}", .0.join("; "))]
    CleanupUnconfirmed(Vec<String>),
    /// The check given to [`crate::Launch::check_results`] rejected a result.
    #[error("{tool}: {problem}")]
    ResultRejected { tool: String, problem: String },
}

impl ClientError {
    /// The `error_type` of the server's refusal to start, if that is what this is.
    pub fn refusal_type(&self) -> Option<&str> {
        match self {
            Self::Exited {
                refusal: Some(refusal),
                ..
            } => refusal.error_type(),
            _ => None,
        }
    }
}

fn exit_detail(code: Option<i32>, refusal: Option<&Envelope>) -> String {
    let code = code.map_or_else(String::new, |c| format!(" with code {c}"));
    match refusal {
        Some(refusal) => format!(
            "{code}: {}: {}",
            refusal.error_type().unwrap_or("refused"),
            refusal.summary().unwrap_or_default()
        ),
        None => code,
    }
}
