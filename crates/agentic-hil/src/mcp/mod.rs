//! `agentic-hil mcp-stdio`: the MCP server on stdin/stdout (rmcp). It lists the gate's tools and hands
//! every call to the gate; a failed call is an `isError` result carrying the envelope, and JSON-RPC
//! errors are left to protocol faults.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use ahil_config::{ConfigError, Environment};
use ahil_gate::audit::Scrubbed;
use ahil_gate::{Bench, ToolSpec};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::RwLock;

mod framing;
mod in_flight;
mod progress;
mod resources;
mod screen;

const INSTRUCTIONS: &str = "\
This server is the only way to the bench hardware: flash, reset, probe and debug the board through \
its tools, never with openocd, pyocd, gdb, st-flash or a serial terminal run from a shell, and never by \
opening /dev/tty* yourself. The operator's configuration lives outside the workspace and decides what \
is allowed. A permission_denied result is final: report which permission was refused and stop; do not \
edit the configuration or find another route. Every result carries ok, summary and, on failure, \
error_type and remediation; continue only while isError is false. config_file_not_found means the \
workspace has no configuration yet: the operator runs `agentic-hil init`. Read project_config_describe \
to see what the configuration allows.";

/// Lines longer than this are dropped unread. The floor is what the reference allows; the upload size
/// term keeps room for a base64 firmware image once uploads arrive.
const MIN_LINE_LIMIT: usize = 10 * 1024 * 1024;

// Out of line, as every command `direct` runs: inlined, their locals add up in the one frame every
// start enters, and a large frame is probed page by page (64 KiB of stack at the `tools/list` peak).
#[inline(never)]
pub fn serve(workspace: &Path, env: &Environment) -> anyhow::Result<ExitCode> {
    let bench = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => {
            let limit = line_limit(loaded.config.artifacts.max_upload_size_mb);
            (Bench::provisioned(loaded, env.clone()), limit)
        }
        // With no configuration yet, or started outside any project (a user-level registration
        // opened in HOME or `/`), the server still starts, so the host connects and every call
        // says why nothing can run and what to do.
        Err(err)
            if matches!(
                err.error_type(),
                "config_file_not_found" | "workspace_is_home"
            ) =>
        {
            (
                Bench::unprovisioned_in(workspace.to_path_buf(), err, env.clone()),
                MIN_LINE_LIMIT,
            )
        }
        Err(err) => {
            // stdout belongs to JSON-RPC, so a refusal to start goes to stderr.
            let refusal = ahil_gate::audit::Sink::for_environment(workspace, env)
                .scrub(&config_refusal(&err));
            eprintln!("{}", serde_json::to_string(refusal.as_value())?);
            return Ok(ExitCode::FAILURE);
        }
    };
    let (bench, limit) = bench;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let served = runtime.block_on(async move {
        let server = Server::new(bench, workspace.to_path_buf(), env.clone());
        let slot = Arc::clone(&server.bench);
        let timers = Arc::clone(&server.timers);
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let (requests, answers, writer) =
            framing::start(tokio::io::stdin(), tokio::io::stdout(), limit);
        // The framing already enforces the limit; rmcp's own cap only has to sit above it.
        let transport = AsyncRwTransport::new_server(requests, answers)
            .with_max_line_length(limit.saturating_add(1024));
        let limited = in_flight::Limited::new(server, in_flight::MAX_IN_FLIGHT);
        let running = Box::pin(limited.serve(transport)).await;
        if let Ok(running) = running {
            let token = running.cancellation_token();
            tokio::select! {
                quit = running.waiting() => { quit?; }
                _ = terminate.recv() => token.cancel(),
            }
        }
        // stdin ended or SIGTERM came: the hold timer first (a stop it began finishes), then
        // close sessions in order and release the bench before exiting, rather than leaving it to
        // the kernel.
        timers.stop().await;
        let bench = slot.read().await.clone();
        // Boxed: inline, the gate's call pipeline would make this whole future (and the frame that
        // starts it, probed page by page at start) tens of KiB larger.
        for closed in Box::pin(bench.shutdown()).await {
            tracing::info!(tool = %closed.tool, ok = closed.ok, error_type = ?closed.error_type, "closed at shutdown");
        }
        // Every answer reaches stdout before the process ends.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
        anyhow::Ok(())
    });
    // A stdin read still parked on a blocking thread must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    served?;
    Ok(ExitCode::SUCCESS)
}

fn line_limit(max_upload_size_mb: u64) -> usize {
    let upload = usize::try_from(max_upload_size_mb)
        .unwrap_or(usize::MAX / 4)
        .saturating_mul(1024 * 1024)
        / 3
        * 4;
    MIN_LINE_LIMIT.max(upload.saturating_add(1024 * 1024))
}

fn config_refusal(err: &ConfigError) -> Value {
    err.document(("tool", "mcp_stdio".into()))
}

#[derive(Clone)]
struct Server {
    bench: Arc<RwLock<Arc<Bench>>>,
    workspace: PathBuf,
    env: Environment,
    timers: Arc<HoldTimers>,
}

/// The task that closes expired holds (`holds:`) of each provisioned gate this server made: its
/// own task, so a forgotten hold is closed with no call from the agent, and awaited at shutdown,
/// so none outlives the server.
#[derive(Default)]
struct HoldTimers {
    stop: tokio_util::sync::CancellationToken,
    tasks: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl HoldTimers {
    fn start(&self, bench: &Arc<Bench>) {
        if !bench.is_provisioned() {
            return;
        }
        let bench = Arc::clone(bench);
        let stop = self.stop.clone();
        let task = tokio::spawn(async move { bench.expire_holds(stop.cancelled_owned()).await });
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(task);
    }

    async fn stop(&self) {
        self.stop.cancel();
        let tasks = std::mem::take(
            &mut *self
                .tasks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl Server {
    fn new(bench: Bench, workspace: PathBuf, env: Environment) -> Self {
        let bench = Arc::new(bench);
        let timers = Arc::new(HoldTimers::default());
        timers.start(&bench);
        Self {
            bench: Arc::new(RwLock::new(bench)),
            workspace,
            env,
            timers,
        }
    }

    /// An unprovisioned server binds as soon as the operator has written a configuration, so the
    /// host need not restart it after `agentic-hil init`.
    async fn current_bench(&self) -> Arc<Bench> {
        let bench = self.bench.read().await.clone();
        if bench.is_provisioned() {
            return bench;
        }
        let mut slot = self.bench.write().await;
        if !slot.is_provisioned()
            && let Ok(loaded) = crate::logs::load_config(&self.workspace, &self.env)
        {
            *slot = Arc::new(Bench::provisioned(loaded, self.env.clone()));
            self.timers.start(&slot);
        }
        slot.clone()
    }
}

/// The one way a call's answer is written: it takes only a scrubbed document.
fn tool_result(
    success: bool,
    document: Scrubbed,
    meta: Option<Value>,
) -> Result<CallToolResult, ErrorData> {
    let text = serde_json::to_string(document.as_value())
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    let mut result = if success {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(document.into_value());
    if let Some(Value::Object(meta)) = meta {
        result.meta = Some(rmcp::model::MetaObject(meta));
    }
    Ok(result)
}

/// Takes the spec by value: its schemas are moved into the listing, not copied, so the largest
/// answer this server gives holds one copy of them (peak memory at `tools/list`).
fn to_tool(spec: ToolSpec) -> Tool {
    let object = |schema: Value| match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let schema = object(spec.input_schema);
    let annotations = if spec.read_only {
        ToolAnnotations::with_title(spec.title.clone())
            .read_only(true)
            .open_world(spec.open_world)
    } else {
        ToolAnnotations::with_title(spec.title.clone())
            .read_only(false)
            .destructive(spec.destructive)
            .idempotent(spec.idempotent)
            .open_world(spec.open_world)
    };
    Tool::new(
        Cow::Owned(spec.name),
        Cow::Owned(spec.description),
        Arc::new(schema),
    )
    .with_raw_output_schema(Arc::new(object(spec.output_schema)))
    .annotate(annotations)
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "agentic-hil",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let bench = self.current_bench().await;
        let tools = bench.tools().into_iter().map(to_tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let bench = self.current_bench().await;
        // What leaves the process, progress and result, passes the one output step.
        let sink = ahil_gate::audit::Sink::for_environment(&self.workspace, &self.env);
        let sink = match bench.loaded() {
            Some(loaded) => sink.with_config(loaded),
            None => sink,
        };
        let progress =
            progress::Progress::for_request(request.meta.as_ref(), &context, sink.clone());
        let arguments = match request.arguments {
            Some(object) => Value::Object(object),
            // Arguments that are no object, carried here by the screen: the gate refuses them.
            None => [request.meta.as_ref(), Some(&context.meta)]
                .into_iter()
                .flatten()
                .find_map(|meta| meta.get(screen::NOT_AN_OBJECT))
                .filter(|carried| !carried.is_object())
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        };
        // A `notifications/cancelled` for this request cancels `context.ct`; the gate stops the
        // driver job through it.
        let call = Box::pin(ahil_gate::cancel::with_cancel(
            context.ct.clone(),
            bench.call(&request.name, arguments),
        ));
        let outcome = match &progress {
            Some(progress) => ahil_gate::progress::with_progress(progress.sink(), call).await,
            None => call.await,
        };
        if let Some(progress) = progress {
            progress.finish().await;
        }
        let success = ahil_gate::conclusive_success(&outcome);
        // isError is decided on the envelope, before the output step.
        let document = sink.scrub(
            &serde_json::to_value(&outcome)
                .map_err(|err| ErrorData::internal_error(err.to_string(), None))?,
        );
        let meta = outcome
            .meta
            .as_ref()
            .map(|meta| sink.scrub(meta).into_value());
        Ok(CallToolResponse::Complete(tool_result(
            success, document, meta,
        )?))
    }
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(resources::list())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&request.uri).map(ReadResourceResponse::Complete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_limit_never_drops_below_ten_mebibytes() {
        assert_eq!(line_limit(1), MIN_LINE_LIMIT);
    }

    #[test]
    fn the_line_limit_leaves_room_for_a_base64_upload() {
        assert!(line_limit(64) >= 64 * 1024 * 1024 * 4 / 3);
    }
}
