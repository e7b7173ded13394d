//! The log writer: every tracing line leaves through the one output step ([`Sink`]), so a backend's
//! words in a debug line are masked and private directories named by placeholder, as in results.

use std::io::Write;
use std::sync::Arc;

use ahil_gate::audit::Sink;
use tracing_subscriber::fmt::MakeWriter;

/// Makes one [`Line`] per event; the formatter writes the whole event into it.
pub struct ScrubbedStderr {
    sink: Arc<Sink>,
}

impl ScrubbedStderr {
    pub fn new(sink: Sink) -> Self {
        Self {
            sink: Arc::new(sink),
        }
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
    sink: Arc<Sink>,
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
        let shown = self.sink.scrub_text(&String::from_utf8_lossy(&self.text));
        // A log line that cannot be written has nowhere else to go.
        let _ = std::io::stderr().lock().write_all(shown.as_bytes());
    }
}
