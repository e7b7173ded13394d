//! The log writer: every tracing line leaves through the one output step ([`Sink`]), so a backend's
//! words in a debug line are masked and private directories named by placeholder, as in results.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use ahil_config::{ConfigError, Environment, LoadedConfig};
use ahil_gate::audit::Sink;
use tracing_subscriber::fmt::MakeWriter;

/// The log writer's sink, shared so that a configuration loaded after the logger started adds its
/// own directories: a custom `state_root` outside HOME is otherwise unknown when logging begins.
static LOG_SINK: OnceLock<Arc<RwLock<Sink>>> = OnceLock::new();

/// The one way this binary loads the operator's configuration: the log writer learns the state
/// root and configuration directory of every configuration a command or the server works under.
pub fn load_config(workspace: &Path, env: &Environment) -> Result<LoadedConfig, ConfigError> {
    let loaded = ahil_config::load_authoritative(workspace, env)?;
    if let Some(shared) = LOG_SINK.get() {
        let mut sink = shared.write().unwrap_or_else(PoisonError::into_inner);
        *sink = sink.clone().with_config(&loaded);
    }
    Ok(loaded)
}

/// Makes one [`Line`] per event; the formatter writes the whole event into it.
pub struct ScrubbedStderr {
    sink: Arc<RwLock<Sink>>,
}

impl ScrubbedStderr {
    pub fn new(sink: Sink) -> Self {
        let sink = Arc::clone(LOG_SINK.get_or_init(|| Arc::new(RwLock::new(sink))));
        Self { sink }
    }
}

impl<'a> MakeWriter<'a> for ScrubbedStderr {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            sink: Arc::clone(&self.sink),
            text: Vec::new(),
        }
    }
}

/// One event's text, held until the formatter is done with it: scrubbing needs the whole line (a
/// secret may be split across the formatter's writes).
pub struct Line {
    sink: Arc<RwLock<Sink>>,
    text: Vec<u8>,
}

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let shown = self
            .sink
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .scrub_text(&String::from_utf8_lossy(&self.text));
        // A log line that cannot be written has nowhere else to go.
        let _ = std::io::stderr().lock().write_all(shown.as_bytes());
    }
}
