//! MCP progress: a call whose request carries a progress token runs with a sink in scope. An attached
//! test plan reports each step to it, and a driver call reports the stages it reaches (`connect`,
//! `download`, `verify`, `reset`), so a long flash is not silent.

use std::future::Future;
use std::sync::Arc;

use serde_json::{Value, json};

/// Where progress documents go (the frontend turns each into a notification).
pub type ProgressSink = Arc<dyn Fn(Value) + Send + Sync>;

tokio::task_local! {
    static PROGRESS: ProgressSink;
}

/// Runs `future` (a gate call) with `sink` receiving its progress.
pub async fn with_progress<F: Future>(sink: ProgressSink, future: F) -> F::Output {
    PROGRESS.scope(sink, future).await
}

/// The sink of the call running now, when its caller asked for progress.
pub fn current() -> Option<ProgressSink> {
    PROGRESS.try_with(Clone::clone).ok()
}

/// A driver's stage callback that reports `tool`'s stages to the current sink, if there is one.
pub fn driver_stages(tool: &str) -> Option<ahil_job::Progress> {
    let sink = current()?;
    let tool = tool.to_owned();
    Some(Arc::new(move |stage: &str| {
        sink(json!({"tool": tool, "stage": stage}));
    }))
}
