//! A private world per test: its own HOME, XDG directories and workspace, and the real binary.

#![allow(dead_code)]

pub mod can_wire;
pub mod debugging;
pub mod fakes;
pub mod gdb_relay;
pub mod processes;
pub mod raw;
pub mod shim;
pub mod sim_board;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The CAN bridge simulator's executable (ahil-sim's, not a command of the product binary).
pub fn can_bridge_simulator() -> PathBuf {
    ahil_sim::executables::executable(ahil_sim::executables::CAN_BRIDGE)
}

/// The bench supply simulator's executable.
pub fn power_supply_simulator() -> PathBuf {
    ahil_sim::executables::executable(ahil_sim::executables::POWER_SUPPLY)
}

pub struct World {
    _root: tempfile::TempDir,
    pub home: PathBuf,
    pub workspace: PathBuf,
}

impl World {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("a temp dir for the test world");
        let root_path = std::fs::canonicalize(root.path()).expect("temp dir resolves");
        let home = root_path.join("home");
        let workspace = root_path.join("work").join("board-fw");
        std::fs::create_dir_all(&home).expect("home dir");
        std::fs::create_dir_all(&workspace).expect("workspace dir");
        Self {
            _root: root,
            home,
            workspace,
        }
    }

    /// A world whose configuration `init` wrote (unbound: init's doctor may exit non-zero).
    pub fn provisioned() -> Self {
        let world = Self::new();
        let (doc, code) = world.run_json(&["init"]);
        assert!(code.is_some(), "init ran: {doc}");
        world
    }

    /// A second workspace, `name`, beside this one and under the same HOME (so the same state
    /// root): another project sharing this bench's devices.
    pub fn another_workspace(&self, name: &str) -> Self {
        let root = tempfile::tempdir().expect("a temp dir for the second workspace");
        let workspace = std::fs::canonicalize(root.path())
            .expect("temp dir resolves")
            .join(name);
        std::fs::create_dir_all(&workspace).expect("workspace dir");
        Self {
            _root: root,
            home: self.home.clone(),
            workspace,
        }
    }

    pub fn binary() -> &'static str {
        env!("CARGO_BIN_EXE_agentic-hil")
    }

    /// A command for the binary, run in the workspace with only this world's environment.
    pub fn command(&self) -> Command {
        self.command_of(Path::new(Self::binary()))
    }

    /// A command for `program` (a simulator), run as [`World::command`] runs the binary.
    pub fn command_of(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        self.scrub(&mut cmd);
        cmd
    }

    pub fn scrub(&self, cmd: &mut Command) {
        cmd.current_dir(&self.workspace)
            .env_clear()
            .env("HOME", &self.home)
            // The password database's home, as a debug build reads it: this world's, whatever HOME
            // a test gives a server afterwards.
            .env("AHIL_TEST_ACCOUNT_HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("LANG", "C.UTF-8");
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("the agentic-hil binary runs")
    }

    /// Runs a command with `--json` and parses its one result document.
    pub fn run_json(&self, args: &[&str]) -> (serde_json::Value, Option<i32>) {
        let mut all: Vec<&str> = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
            panic!(
                "stdout of {args:?} is one JSON document ({err}): {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        // A command that answers as a tool does (`agentic-hil flash --json`) answers its schema.
        if let Some(tool) = doc["tool"].as_str()
            && ahil_gate::tools(true).iter().any(|spec| spec.name == tool)
        {
            check_result(tool, &doc);
        }
        (doc, out.status.code())
    }

    pub fn config_path(&self) -> PathBuf {
        let dir = self.home.join(".config/agentic-hil/projects");
        // Projects are named `<workspace name>-<hash>`; a HOME may hold another workspace's too.
        let prefix = format!(
            "{}-",
            self.workspace
                .file_name()
                .expect("a named workspace")
                .to_string_lossy()
        );
        let entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("init created the projects directory")
            .map(|e| e.expect("entry").path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            })
            .collect();
        assert_eq!(
            entries.len(),
            1,
            "one project directory in {}",
            dir.display()
        );
        entries[0].join("config.yaml")
    }

    /// Writes a test plan under `plans/`; its workspace-relative path.
    pub fn write_plan(&self, name: &str, text: &str) -> String {
        let rel = format!("plans/{name}");
        let path = self.workspace.join(&rel);
        std::fs::create_dir_all(path.parent().expect("plans dir")).expect("plans dir");
        std::fs::write(&path, text).expect("plan written");
        rel
    }

    /// Binds the configuration's one debugger (as `init` wrote it) to a fake `openocd` running
    /// `script`, on probe `BOARD7`.
    pub fn bind_fake_openocd(&self, script: &str) {
        let openocd = self.write_fake_tool("openocd", script);
        let path = self.config_path();
        let text = std::fs::read_to_string(&path)
            .expect("read config")
            .replacen(
                "executable: null",
                &format!("executable: \"{}\"", openocd.display()),
                1,
            )
            .replacen("probe_id: null", "probe_id: \"BOARD7\"", 1);
        std::fs::write(&path, text).expect("bind the debugger");
    }

    pub fn write_fake_tool(&self, name: &str, script: &str) -> PathBuf {
        let dir = self.home.join("tools");
        std::fs::create_dir_all(&dir).expect("tools dir");
        let path = dir.join(name);
        std::fs::write(&path, script).expect("write fake tool");
        make_executable(&path);
        path
    }
}

#[path = "../../../ahil-config/tests/reference/mod.rs"]
mod installed_reference;

/// The reference implementation (agentic-hil 0.25.0) that scripts/setup-debian.sh installs; a test
/// that compares with it fails when it is missing.
pub fn reference() -> PathBuf {
    installed_reference::reference()
}

/// An MCP session with this world's server, over rmcp's own client.
pub async fn connect(world: &World) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    connect_as(world, ()).await
}

/// A client with its own handler (one that keeps notifications, for example).
pub async fn connect_as<H: rmcp::ClientHandler>(
    world: &World,
    handler: H,
) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
    let mut cmd = Command::new(World::binary());
    world.scrub(&mut cmd);
    connect_command_as(cmd, handler).await
}

/// An MCP session with `cmd mcp-stdio` (a command whose environment the test chose).
pub async fn connect_command(cmd: Command) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    connect_command_as(cmd, ()).await
}

async fn connect_command_as<H: rmcp::ClientHandler>(
    mut cmd: Command,
    handler: H,
) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
    use rmcp::ServiceExt;
    cmd.arg("mcp-stdio");
    let transport = rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(cmd))
        .expect("the server process starts");
    handler
        .serve(transport)
        .await
        .expect("the MCP handshake succeeds")
}

/// A client handler that keeps the progress notifications it receives.
#[derive(Clone, Default)]
pub struct Collector(
    pub std::sync::Arc<std::sync::Mutex<Vec<rmcp::model::ProgressNotificationParam>>>,
);

impl rmcp::ClientHandler for Collector {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().expect("collector").push(params);
    }
}

/// Calls `tool` on a new server with a progress token and requires success; the client (to close)
/// and what it collected.
pub async fn call_with_progress(
    world: &World,
    tool: &str,
    args: &serde_json::Value,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, Collector>,
    Collector,
) {
    let collector = Collector::default();
    let client = connect_as(world, collector.clone()).await;
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.set_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::Number(7),
    ));
    let mut request = rmcp::model::CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().expect("arguments are an object"));
    request.meta = Some(meta);
    let result = client.call_tool(request).await.expect("tools/call answers");
    assert_ne!(
        result.is_error,
        Some(true),
        "{:?}",
        result.structured_content
    );
    (client, collector)
}

/// The emulated board of a world, stopped when dropped, so a failed assertion never leaves QEMU
/// running.
pub struct RunningBoard<'w>(pub &'w World);

impl<'w> RunningBoard<'w> {
    /// Starts the world's board on `image` (workspace-relative).
    pub fn start(world: &'w World, image: &str) -> Self {
        let (doc, code) = world.run_json(&["sim", "start", "--image", image]);
        assert_eq!(code, Some(0), "sim start: {doc}");
        Self(world)
    }
}

impl Drop for RunningBoard<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["sim", "stop"]);
    }
}

/// The emulated board's firmware as the build left it.
pub fn firmware_image() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build/ahil-fw-v1.elf")
}

pub fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path).expect("stat").permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

/// An MCP client session with a server of this world.
pub type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// One `tools/call`: the envelope (structured content) and whether the result is an error.
pub async fn call(
    client: &Client,
    tool: &str,
    args: serde_json::Value,
) -> (serde_json::Value, bool) {
    let mut request = rmcp::model::CallToolRequestParams::new(tool.to_owned());
    if let serde_json::Value::Object(map) = args {
        request = request.with_arguments(map);
    }
    let result = client.call_tool(request).await.expect("tools/call answers");
    let doc = result
        .structured_content
        .expect("the envelope is structured content");
    check_result(tool, &doc);
    (doc, result.is_error == Some(true))
}

/// Fails the test when `result`, answered to a call of `tool`, does not match the outputSchema the
/// tool publishes; the message names the path of the bad field.
pub fn check_result(tool: &str, result: &serde_json::Value) {
    if let Err(problem) = checked_result(tool, result) {
        panic!("{problem}: {result}");
    }
}

/// [`check_result`] as `ahil-client`'s result check: the problem is returned, so the call fails.
pub fn checked_result(tool: &str, result: &serde_json::Value) -> Result<(), String> {
    record(tool, result);
    ahil_gate::catalogue_output::check_result(tool, result)
}

/// With `AHIL_RECORD_RESULTS=<dir>`, every checked result is appended to a file there (what the
/// output schemas were derived from).
fn record(tool: &str, result: &serde_json::Value) {
    use std::io::Write as _;
    let Some(dir) = std::env::var_os("AHIL_RECORD_RESULTS") else {
        return;
    };
    let path = std::path::Path::new(&dir).join(format!("{}.jsonl", std::process::id()));
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(
            file,
            "{}",
            serde_json::json!({"tool": tool, "result": result})
        );
    }
}

/// A call that must succeed; its envelope.
pub async fn ok(client: &Client, tool: &str, args: serde_json::Value) -> serde_json::Value {
    let (doc, is_error) = call(client, tool, args).await;
    assert!(!is_error, "{tool}: {doc}");
    doc
}

/// A call that must fail with `error_type`; its envelope.
pub async fn refused(
    client: &Client,
    tool: &str,
    args: serde_json::Value,
    error_type: &str,
) -> serde_json::Value {
    let (doc, is_error) = call(client, tool, args).await;
    assert!(is_error, "{tool} should fail with {error_type}: {doc}");
    assert_eq!(doc["error_type"], error_type, "{doc}");
    doc
}

/// The identifiers of the frames a CAN read returned, in order.
pub fn frame_ids(doc: &serde_json::Value) -> Vec<u64> {
    doc["frames"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["id"].as_u64()).collect())
        .unwrap_or_default()
}

/// The keys an adoption's plan carries from the board, in order.
pub fn carried_keys(plan: &serde_json::Value) -> Vec<&str> {
    plan["carried"]
        .as_array()
        .expect("carried")
        .iter()
        .filter_map(|c| c["key"].as_str())
        .collect()
}

/// The capture's log, named in its result: a start event, the received bytes, a stop event.
pub fn assert_capture_log(workspace: &Path, capture: &serde_json::Value) {
    let log_path = capture["log_path"]
        .as_str()
        .expect("the capture names its log");
    assert!(
        !log_path.starts_with('/'),
        "a workspace-relative log path: {log_path}"
    );
    let log = std::fs::read_to_string(workspace.join(log_path)).expect("the capture log");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(
        lines.first().map(|l| &l["event"]),
        Some(&serde_json::json!("start")),
        "{log}"
    );
    assert_eq!(
        lines.last().map(|l| &l["event"]),
        Some(&serde_json::json!("stop")),
        "{log}"
    );
    let received: u64 = lines
        .iter()
        .filter(|l| l["direction"] == "rx")
        .filter_map(|l| l["bytes"].as_u64())
        .sum();
    assert!(
        received >= capture["bytes_read"].as_u64().unwrap_or(u64::MAX),
        "every byte read is in the log: {log}"
    );
}

/// Sends `flash_firmware` with `args` as request 900, asking for progress, and cancels it once the
/// flash reports its `capture` stage: the flash is over (the backend has exited) and the capture
/// waits, so the cancel lands in the capture however slow the host is. Returns when the cancel is
/// sent.
pub fn cancel_the_flash_once_its_capture_waits(server: &mut raw::Mcp, args: &serde_json::Value) {
    server.send(
        &serde_json::json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
        "params": {"name": "flash_firmware", "_meta": {"progressToken": "flash-900"},
                   "arguments": args}}),
    );
    loop {
        let message = server.next_message();
        assert_ne!(message["id"], 900, "the flash ended first: {message}");
        if message["params"]["progressToken"] == "flash-900"
            && message["params"]["message"] == "flash_firmware: capture"
        {
            break;
        }
    }
    server.send(
        &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 900, "reason": "the user changed their mind"}}),
    );
}

/// The flash's report in the workspace once it is written, and how long after `since` it was.
pub fn flash_report_after(
    workspace: &Path,
    since: std::time::Instant,
) -> (serde_json::Value, std::time::Duration) {
    loop {
        let report = ["last-report.json", "last-failure.json"]
            .iter()
            .filter_map(|name| {
                let path = workspace.join(".agentic-hil/reports").join(name);
                serde_json::from_slice::<serde_json::Value>(&std::fs::read(path).ok()?).ok()
            })
            .find(|report| report["tool"] == "flash_firmware");
        if let Some(report) = report {
            return (report, since.elapsed());
        }
        assert!(
            since.elapsed() < std::time::Duration::from_mins(1),
            "the cancelled flash never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The report of a good flash whose capture the client's cancel cut short: `interrupted` and
/// `cancelled`, with the capture saying it was cancelled (not that its `until` was missed), while
/// the flash stands as done: the image written and the effect committed, the board's state known, so
/// nothing is settled as unknown and the bench is not blocked.
pub fn assert_the_capture_was_cut_short(world: &World, report: &serde_json::Value) {
    assert_eq!(report["error_type"], "interrupted", "{report}");
    assert_eq!(report["cancelled"], true, "{report}");
    assert_eq!(report["capture"]["cancelled"], true, "{report}");
    assert_eq!(report["capture"]["until_matched"], false, "{report}");
    // The capture waited 30 s for its `until`; the cancel ended it at once.
    assert!(
        report["capture"]["capture_ms"]
            .as_u64()
            .is_some_and(|ms| ms < 10_000),
        "{report}"
    );
    let summary = report["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("cancelled") && !summary.contains("did not see its until"),
        "{report}"
    );
    assert_eq!(report["image_written"], true, "{report}");
    assert_eq!(report["side_effect_status"], "committed", "{report}");
    assert_eq!(report["target_contacted"], true, "{report}");
    assert_ne!(report["hardware_state"], "unknown", "{report}");
    let (status, _) = world.run_json(&["lease-status"]);
    assert_eq!(status["blocked"], false, "{status}");
}

/// Sends `tool` with `args` (a wait that will not be met) as request 900 and cancels it a second
/// later; then checks the cancelled read's report (MCP drops its answer, so the report is where it
/// says how it ended): `interrupted` and `cancelled`, never `ok` with nothing read, and settled as
/// not contacted (a read changes nothing on the target), so the bench is not blocked.
pub fn cancel_a_read(server: &mut raw::Mcp, world: &World, tool: &str, args: &serde_json::Value) {
    server.send(
        &serde_json::json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
        "params": {"name": tool, "arguments": args}}),
    );
    std::thread::sleep(std::time::Duration::from_secs(1));
    server.send(
        &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 900, "reason": "the user changed their mind"}}),
    );
    let path = world
        .workspace
        .join(".agentic-hil/reports/last-failure.json");
    let asked = std::time::Instant::now();
    let failure = loop {
        let failure: serde_json::Value = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let this_one = failure["tool"] == tool && failure["arguments"] == *args;
        if this_one || asked.elapsed() > std::time::Duration::from_secs(10) {
            break failure;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        failure["arguments"], *args,
        "the cancelled read did not fail: {failure}"
    );
    assert_eq!(failure["error_type"], "interrupted", "{failure}");
    assert_eq!(failure["cancelled"], true, "{failure}");
    assert_eq!(failure["target_contacted"], false, "{failure}");
    assert_eq!(failure["hardware_state"], "unchanged", "{failure}");
    assert_eq!(failure["retry_safe"], true, "{failure}");
    let (status, _) = world.run_json(&["lease-status"]);
    assert_eq!(
        status["blocked"], false,
        "a cancelled read blocks nothing: {status}"
    );
}

/// Sends the frame `stimulus` (the ECU answers it), then `can_read` with `cancelled` (a wait that will
/// not be met, which takes the answer while it waits), cancels that a second later ([`cancel_a_read`]),
/// then reads with `next`: its answer, which must come without waiting behind the cancelled read.
pub fn can_read_after_a_cancelled_one(
    server: &mut raw::Mcp,
    world: &World,
    stimulus: &serde_json::Value,
    cancelled: &serde_json::Value,
    next: &serde_json::Value,
) -> serde_json::Value {
    let sent = server.envelope("can_send", stimulus);
    assert_eq!(sent["ok"], true, "{sent}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    cancel_a_read(server, world, "can_read", cancelled);
    let asked = std::time::Instant::now();
    let answer = server.envelope("can_read", next);
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(3),
        "the read waited {:?} behind the cancelled one",
        asked.elapsed()
    );
    answer
}

/// Live (not zombie) processes whose command line holds every one of `words`.
pub fn processes_with(words: &[&str]) -> Vec<i32> {
    processes::pids()
        .filter_map(|pid| i32::try_from(pid).ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let text = String::from_utf8_lossy(&cmdline);
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .unwrap_or_default()
                .trim_start()
                .starts_with('Z');
            words.iter().all(|w| text.contains(w)) && !zombie
        })
        .collect()
}
