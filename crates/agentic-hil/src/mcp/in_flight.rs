//! A cap on the requests the server works on at once.
//!
//! rmcp starts a task for every request line as soon as it has read it, with no limit: a client
//! that writes thousands of `tools/call` or `resources/read` lines without waiting for answers
//! would have the server run thousands of gate calls at once, each with its buffers, its files and
//! (for a plan or a device wait) its threads. [`Limited`] wraps the server: a request beyond
//! [`MAX_IN_FLIGHT`] is answered at once with a JSON-RPC error that names the limit, instead of
//! being run.
//!
//! It is answered, not held: holding it would mean not reading stdin until an answer went out,
//! and a `notifications/cancelled` behind it would then wait too, so the one way to end a long call
//! early would stop working exactly when the server is busiest. Notifications are never counted.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{ErrorCode, ProtocolVersion};
use rmcp::service::{NotificationContext, RequestContext, ServiceRole};
use rmcp::{ErrorData, RoleServer, Service};
use serde_json::json;
use tokio::sync::Semaphore;

/// Requests worked on at once. An agent host waits for its calls' answers and has a handful open
/// at a time (one per tool call it is waiting on); 64 is far above that, and as many as the
/// framing queues answers ([`super::framing`]), so only a client flooding the server reaches it.
pub const MAX_IN_FLIGHT: usize = 64;

/// The JSON-RPC error a request beyond the cap gets (the implementation-defined server range).
pub const TOO_MANY_IN_FLIGHT: i32 = -32000;

/// The server, working on at most `limit` requests at once.
pub struct Limited<S> {
    inner: S,
    limit: usize,
    slots: Arc<Semaphore>,
}

impl<S> Limited<S> {
    pub fn new(inner: S, limit: usize) -> Self {
        Self {
            inner,
            limit,
            slots: Arc::new(Semaphore::new(limit)),
        }
    }

    fn refusal(&self) -> ErrorData {
        ErrorData::new(
            ErrorCode(TOO_MANY_IN_FLIGHT),
            format!(
                "Too many requests in flight: this server works on at most {} at once. Wait for \
                 the answers to earlier requests before sending more.",
                self.limit
            ),
            Some(json!({"max_in_flight": self.limit})),
        )
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for Limited<S> {
    async fn handle_request(
        &self,
        request: <RoleServer as ServiceRole>::PeerReq,
        context: RequestContext<RoleServer>,
    ) -> Result<<RoleServer as ServiceRole>::Resp, ErrorData> {
        // Held until the handler returns; the answer is then on its way to stdout.
        let Ok(_slot) = self.slots.try_acquire() else {
            return Err(self.refusal());
        };
        self.inner.handle_request(request, context).await
    }

    async fn handle_notification(
        &self,
        notification: <RoleServer as ServiceRole>::PeerNot,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> <RoleServer as ServiceRole>::Info {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}
