//! MCP progress notifications: when a request carries a `progressToken`, each step of an attached
//! test plan run and each stage a driver call reaches (`flash_firmware: download`) becomes one
//! `notifications/progress`, in order, before the call's result.

use std::sync::Arc;
use std::time::Duration;

use ahil_gate::audit::Sink;
use ahil_gate::progress::ProgressSink;
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken, RequestMetaObject};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The forwarding side of one call's progress.
pub struct Progress {
    sink: ProgressSink,
    forwarder: JoinHandle<()>,
}

impl Progress {
    /// Progress for this request, if the client asked for it.
    /// Each notification passes `sink`, the one output step the call's result passes: a stage can
    /// be a backend's words (a probe-rs worker's stage line).
    pub fn for_request(
        meta: Option<&RequestMetaObject>,
        context: &RequestContext<RoleServer>,
        sink: Sink,
    ) -> Option<Self> {
        let token = meta
            .and_then(RequestMetaObject::get_progress_token)
            .or_else(|| context.meta.get_progress_token())?;
        let (tx, rx) = mpsc::unbounded_channel::<Value>();
        let forwarder = tokio::spawn(forward(token, rx, context.peer.clone(), sink));
        let sink: ProgressSink = Arc::new(move |doc| {
            let _ = tx.send(doc);
        });
        Some(Self { sink, forwarder })
    }

    pub fn sink(&self) -> ProgressSink {
        Arc::clone(&self.sink)
    }

    /// Lets the last notifications out before the result is answered.
    pub async fn finish(self) {
        drop(self.sink);
        let _ = tokio::time::timeout(Duration::from_secs(1), self.forwarder).await;
    }
}

async fn forward(
    token: ProgressToken,
    mut rx: mpsc::UnboundedReceiver<Value>,
    peer: rmcp::Peer<RoleServer>,
    sink: Sink,
) {
    let mut count = 0.0;
    while let Some(doc) = rx.recv().await {
        count += 1.0;
        let param = ProgressNotificationParam::new(token.clone(), count)
            .with_message(sink.scrub_text(&message(&doc)));
        if peer.notify_progress(param).await.is_err() {
            break;
        }
    }
}

/// One progress document as a line: a driver stage, or a test plan step.
fn message(doc: &Value) -> String {
    if let Some(stage) = doc["stage"].as_str() {
        return format!("{}: {stage}", doc["tool"].as_str().unwrap_or("?"));
    }
    let mut message = format!(
        "step {} of {}: {}",
        doc["step"],
        doc["total_steps"],
        doc["action"].as_str().unwrap_or("?")
    );
    if let Some(route) = doc["route"].as_str() {
        message = format!("{message} ({route})");
    }
    if let Some(i) = doc.get("iteration") {
        message = format!("{message}, iteration {i}");
    }
    if let Some(nested) = doc["nested_action"].as_str() {
        message = format!("{message}, step {}: {nested}", doc["nested_step"]);
    }
    message
}
