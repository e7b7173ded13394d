//! Black-box, end to end: every byte that leaves the gate passes one output step. Secrets are
//! planted in the server's environment, in a backend's printed output (a scripted openocd that
//! says `password=…`, a URL with a password, a bearer token, `token: …`, a JSON `"api_key"`, an
//! AWS key id, `user:pass@host`, `--password …`, a token as a URL's user) and in a configuration value (a
//! COM port whose device is a URL with a password); then every tool is called through MCP, the
//! operator commands run with and without `--json`, com-stdio and `watch --once` run, and no
//! secret and no absolute HOME, state-root or configuration path may appear in any MCP result,
//! CLI stdout or stderr, file under the workspace's `.agentic-hil/`, or com-stdio output.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::raw::EchoBoard;
use support::sim_board::{SimBoard, initialised, qemu_board, sim_config, state_root};
use support::{World, fakes};

const SECRETS: &[&str] = &[
    "BACKENDSECRET",
    "URLSECRET",
    "BEARERSECRET",
    "ENVSECRET",
    "PROXYSECRET",
    "CFGSECRET",
    "TOKSECRET",
    "JSONSECRET",
    "KEYIDSECRET",
    "PEMSECRET",
    "BARESECRET",
    "FLAGSECRET",
    "COOKIESECRET",
    "USERTOKSECRET",
    "AWSENVSECRET",
    // Typed into com-stdio and echoed back in upper case by the board.
    "devsecret",
    "DEVSECRET",
];

/// The environment secrets, given to the server and to every CLI command.
const PLANTED_ENV: &[(&str, &str)] = &[
    ("GITHUB_TOKEN", "ENVSECRET"),
    ("HTTPS_PROXY", "http://ci:PROXYSECRET@proxy.example:3128"),
    ("AWS_SECRET_ACCESS_KEY", "AWSENVSECRET"),
];

/// An openocd that first says what a leaky real tool says (and what its environment holds), then
/// behaves as the scripted fake's scenario says.
const LEAKY_OPENOCD: &str = r#"#!/usr/bin/python3
import os, runpy, sys
def say(text):
    sys.stderr.write(text + "\n")
sys.stderr.flush()
say("Info : fetching https://ci:URLSECRET@mirror.example/board.cfg")
say("Info : login password=BACKENDSECRET")
say("Info : sent Authorization: Bearer BEARERSECRET")
say("Info : token: TOKSECRET")
say('Info : config {"api_key": "JSONSECRET", "speed": 4000}')
say("Info : key id AKIAKEYIDSECRET12345 in use")
say("Info : key -----BEGIN PRIVATE KEY-----\nPEMSECRET\n-----END PRIVATE KEY-----")
say("Info : scp ci:BARESECRET@fw.example:/board.cfg")
say("Info : helper --password FLAGSECRET --speed 4000")
say("Info : Cookie: sid=COOKIESECRET")
say("Info : clone https://USERTOKSECRET@git.example/cfg.git")
for key in ("GITHUB_TOKEN", "HTTPS_PROXY", "AWS_SECRET_ACCESS_KEY"):
    if key in os.environ:
        say("Info : %s=%s" % (key, os.environ[key]))
sys.stderr.flush()
here = os.path.dirname(os.path.abspath(sys.argv[0]))
failing = open(os.path.join(here, "fake-scenario")).read().strip() != "ok"
try:
    runpy.run_path(os.path.join(here, "openocd_fake.py"), run_name="__main__")
finally:
    if failing:
        say("Error: login refused for password=BACKENDSECRET (Authorization: Bearer BEARERSECRET)"
            " token: TOKSECRET {\"api_key\": \"JSONSECRET\"} key AKIAKEYIDSECRET12345"
            " scp ci:BARESECRET@fw.example:/b.cfg --password FLAGSECRET"
            " https://USERTOKSECRET@git.example/c.git")
        sys.stderr.flush()
"#;

/// What may not appear anywhere: the secrets and the operator's private directories.
struct Forbidden {
    /// HOME, and the XDG state and configuration homes where a test puts them elsewhere.
    paths: Vec<String>,
}

impl Forbidden {
    fn check(&self, sink: &str, text: &str) {
        for secret in SECRETS {
            // Device data also travels as hex, two characters a byte.
            let hex = secret.bytes().fold(String::new(), |mut hex, b| {
                use std::fmt::Write as _;
                let _ = write!(hex, "{b:02x}");
                hex
            });
            assert!(
                !text.contains(secret) && !text.contains(&hex),
                "{sink} shows the planted secret {secret}: {text}"
            );
        }
        // Where the state root and the configuration directory are under HOME, no absolute path
        // below HOME covers all three.
        for path in &self.paths {
            assert!(
                !text.contains(path.as_str()),
                "{sink} shows the private directory {path}: {text}"
            );
        }
    }

    fn output(&self, what: &str, out: &Output) {
        self.check(
            &format!("{what} stdout"),
            &String::from_utf8_lossy(&out.stdout),
        );
        self.check(
            &format!("{what} stderr"),
            &String::from_utf8_lossy(&out.stderr),
        );
    }
}

struct Bench {
    world: World,
    tools: PathBuf,
    forbidden: Forbidden,
    _board: EchoBoard,
}

impl Bench {
    fn new() -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        fakes::install_probe_cli(&world, "openocd_fake.py", "ok");
        let tools = fakes::tools(&world);
        let exe = tools.join("openocd.py");
        std::fs::write(&exe, LEAKY_OPENOCD).expect("the leaky openocd");
        support::make_executable(&exe);
        let board = EchoBoard::start();
        let state = world.home.join(".local/state/agentic-hil");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: board\n  controller: stm32f405\n\
             debuggers:\n  probe:\n    type: openocd\n    executable: \"{exe}\"\n\
             \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
             com_ports:\n  uart0:\n    device: \"{device}\"\n    identity_source: device\n\
             \x20   permissions:\n      allow_write: true\n\
             \x20 net0:\n    device: \"rfc2217://ci:CFGSECRET@127.0.0.1:9\"\n    identity_source: device\n\
             artifacts:\n  allowed_roots: [fw]\n",
            ws = world.workspace.display(),
            state = state.display(),
            exe = exe.display(),
            device = board.device,
        );
        let forbidden = configure(&world, &config);
        Self {
            world,
            tools,
            forbidden,
            _board: board,
        }
    }

    fn scenario(&self, scenario: &str) {
        fakes::play(&self.tools, scenario);
    }

    fn command(&self) -> Command {
        planted(&self.world)
    }
}

/// Writes `config` as the world's configuration and the firmware as `fw/fw.elf`; what the world's
/// sinks may not show.
fn configure(world: &World, config: &str) -> Forbidden {
    std::fs::write(world.config_path(), config).expect("the test config is written");
    support::sim_board::copy_firmware_as(world, &[("ahil-fw-v1.elf", "fw.elf")]);
    Forbidden {
        paths: vec![world.home.display().to_string()],
    }
}

/// The world's command with the environment secrets planted.
fn planted(world: &World) -> Command {
    let mut cmd = world.command();
    cmd.envs(PLANTED_ENV.iter().copied());
    cmd
}

async fn connect(world: &World) -> support::Client {
    support::connect_command(planted(world)).await
}

/// The arguments each tool is called with; every other tool gets `{}` (its refusal is a result
/// that leaves the gate too).
fn arguments(tool: &str) -> Value {
    match tool {
        "flash_firmware" => json!({"image_path": "fw/fw.elf", "reset_after_flash": true}),
        "reset_target" => json!({"mode": "init"}),
        "debug_start_session" => json!({"elf_path": "fw/fw.elf"}),
        "debug_symbol_info" | "debug_symbol_value" => json!({"symbol": "main"}),
        "com_session_start" => json!({"port_id": "uart0", "clear_buffer": true}),
        "com_write" => json!({"port_id": "uart0", "text": "hi\n"}),
        "com_read" => json!({"port_id": "uart0", "wait_timeout_s": 0.5}),
        "com_session_stop" => json!({"port_id": "uart0"}),
        "project_config_set" => json!({"changes": [{"key": "target.name", "value": "x"}]}),
        _ => json!({}),
    }
}

/// Tools not called: `server_upgrade` would replace the binary under test.
const NOT_CALLED: &[&str] = &["server_upgrade"];

/// Calls `tool` and checks what came back, both the text content and the structured content;
/// returns the structured content.
async fn call_and_check(
    client: &support::Client,
    forbidden: &Forbidden,
    tool: &str,
    args: Value,
) -> Value {
    let mut request = rmcp::model::CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(map) = args {
        request = request.with_arguments(map);
    }
    let answer = tokio::time::timeout(Duration::from_mins(1), client.call_tool(request))
        .await
        .unwrap_or_else(|_| panic!("{tool} answers within a minute"))
        .expect("tools/call answers");
    let shown = serde_json::to_string(&answer).expect("the result serializes");
    forbidden.check(&format!("the MCP result of {tool}"), &shown);
    answer.structured_content.unwrap_or(Value::Null)
}

fn workspace_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            workspace_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_planted_secret_or_private_directory_reaches_any_sink() {
    let bench = Bench::new();
    let forbidden = &bench.forbidden;
    bench.scenario("ok");
    let client = connect(&bench.world).await;
    let listed = client.list_all_tools().await.expect("tools/list answers");
    let first = ["probe_target", "flash_firmware", "reset_target"];
    let mut order: Vec<String> = first.iter().map(|t| (*t).to_owned()).collect();
    order.extend(
        listed
            .iter()
            .map(|t| t.name.to_string())
            .filter(|t| !first.contains(&t.as_str()) && !NOT_CALLED.contains(&t.as_str())),
    );
    let mut answers = Vec::new();
    for tool in &order {
        answers.push(call_and_check(&client, forbidden, tool, arguments(tool)).await);
    }
    // A failing backend: its words become the refusal's `backend_message`.
    bench.scenario("target-absent");
    for tool in ["probe_target", "flash_firmware"] {
        answers.push(call_and_check(&client, forbidden, tool, arguments(tool)).await);
    }
    // The planted values did reach the results, masked: the test proves the step, not silence.
    let all = Value::Array(answers).to_string();
    if let Some(dump) = std::env::var_os("OUTPUT_SINKS_DUMP") {
        std::fs::write(dump, &all).expect("dump");
    }
    for masked in [
        "password=[redacted]",
        "https://ci:[redacted]@mirror.example",
        "Bearer [redacted]",
        "token: [redacted]",
        "--password [redacted]",
        "ci:[redacted]@fw.example",
        "rfc2217://ci:[redacted]@127.0.0.1:9",
        "~/tools/openocd.py",
    ] {
        assert!(all.contains(masked), "some result shows {masked}: {all}");
    }
    bench.scenario("ok");
    client.cancel().await.expect("client closes");

    let commands: &[&[&str]] = &[
        &["doctor"],
        &["lease-status"],
        &["com-ports"],
        &["debugger-probes"],
        &["config-reload"],
        &["check-plan"],
        &["report-state-repair"],
        &["test-reactor-status"],
        &["recover"],
    ];
    for args in commands {
        for json in [false, true] {
            let mut all = args.to_vec();
            if json {
                all.push("--json");
            }
            let out = bench.command().args(&all).output().expect("the CLI runs");
            forbidden.output(&format!("`{}`", all.join(" ")), &out);
        }
    }
    let out = bench
        .command()
        .args(["watch", "--once", "--width", "300", "--height", "60"])
        .output()
        .expect("watch runs");
    forbidden.output("`watch --once`", &out);

    // The echo board answers in upper case: the firmware "prints" a credential.
    for (port, typed) in [("uart0", &b"password=devsecret\n"[..]), ("net0", b"")] {
        let mut child = bench
            .command()
            .args(["com-stdio", "--port-id", port, "--eof-idle-timeout-s", "1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("com-stdio starts");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(typed).expect("typed");
        drop(stdin);
        let out = child.wait_with_output().expect("com-stdio ends");
        forbidden.output(&format!("com-stdio on {port}"), &out);
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("DEVSECRET"),
            "the device's credential is masked on the terminal"
        );
        if port == "uart0" {
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                "PASSWORD=[redacted]\n",
                "stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    let mut files = Vec::new();
    workspace_files(&bench.world.workspace.join(".agentic-hil"), &mut files);
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    for wanted in [
        "last-report.json",
        "last-failure.json",
        "probe_target.jsonl",
    ] {
        assert!(
            names.iter().any(|n| n == wanted),
            "the run wrote {wanted}: {names:?}"
        );
    }
    for file in &files {
        let text = String::from_utf8_lossy(&std::fs::read(file).expect("readable")).into_owned();
        forbidden.check(&format!("{}", file.display()), &text);
    }
}

#[tokio::test]
async fn before_any_configuration_exists_no_result_names_a_private_directory() {
    // The XDG homes sit outside HOME here, so `~` cannot hide them: only the placeholders can.
    let world = World::new();
    let xdg = world.home.with_file_name("xdg");
    let forbidden = Forbidden {
        paths: vec![world.home.display().to_string(), xdg.display().to_string()],
    };
    let outside = |mut cmd: Command| {
        cmd.env("XDG_CONFIG_HOME", xdg.join("config"))
            .env("XDG_STATE_HOME", xdg.join("state"));
        cmd
    };
    let mut cli = outside(planted(&world));
    let out = cli
        .args(["doctor", "--json"])
        .output()
        .expect("the CLI runs");
    forbidden.output("`doctor --json` before init", &out);
    let client = support::connect_command(outside(planted(&world))).await;
    let mut created = Value::Null;
    for tool in [
        "project_config_describe",
        "probe_target",
        "project_config_create",
        "project_config_describe",
    ] {
        let doc = call_and_check(&client, &forbidden, tool, json!({})).await;
        if tool == "project_config_create" {
            created = doc;
        }
    }
    client.cancel().await.expect("client closes");
    // XDG folders that are not the account's own: the server writes no first configuration there
    // (the operator's `init` does), and its refusal names the file by placeholder too.
    assert_eq!(created["error_type"], json!("config_invalid"), "{created}");
    assert!(
        created.to_string().contains("<config_dir>/config.yaml"),
        "the file is named by placeholder: {created}"
    );
    let out = outside(planted(&world))
        .args(["init", "--json"])
        .output()
        .expect("the CLI runs");
    forbidden.output("`init --json`", &out);
    assert!(out.status.success(), "init: {out:?}");
    for args in [
        &["doctor"][..],
        &["doctor", "--json"],
        &["lease-status", "--json"],
    ] {
        let out = outside(planted(&world))
            .args(args)
            .output()
            .expect("the CLI runs");
        forbidden.output(&format!("`{}`", args.join(" ")), &out);
    }
}

/// The emulated board: its sockets and UART live under the state root, so the debug, COM and
/// flash results of a real session are where a private path would show first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emulated_board_session_shows_no_private_directory_in_any_sink() {
    let world = initialised();
    let uart = state_root(&world).join("sim/board/uart");
    let config = sim_config(
        &world,
        &qemu_board(
            "      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n",
        ),
        &format!(
            "com_ports:\n  uart:\n    device: \"{uart}\"\n    resource_id: sim-uart\n\
             \x20 net0:\n    device: \"rfc2217://ci:CFGSECRET@127.0.0.1:9\"\n    identity_source: device\n\
             debug:\n  allowed_symbols: [on_tick, counter, magic, g_u32]\n",
            uart = uart.display(),
        ),
    );
    let forbidden = configure(&world, &config);
    let out = planted(&world)
        .args(["sim", "start", "--image", "fw/fw.elf", "--json"])
        .output()
        .expect("sim start runs");
    assert!(out.status.success(), "sim start: {out:?}");
    let _board = SimBoard::stopped_on_drop(&world);
    forbidden.output("`sim start --json`", &out);
    let client = connect(&world).await;
    let calls = [
        ("probe_target", json!({})),
        ("flash_firmware", json!({"image_path": "fw/fw.elf"})),
        ("reset_target", json!({})),
        ("com_session_start", json!({"port_id": "uart"})),
        ("com_read", json!({"port_id": "uart", "wait_timeout_s": 1})),
        ("com_session_stop", json!({"port_id": "uart"})),
        ("debug_start_session", json!({"image_path": "fw/fw.elf"})),
        ("debug_set_breakpoint", json!({"location": "on_tick"})),
        ("debug_list_breakpoints", json!({})),
        ("debug_continue", json!({"timeout_s": 5})),
        ("debug_get_stop_reason", json!({})),
        ("debug_symbol_info", json!({"symbol": "magic"})),
        ("debug_symbol_value", json!({"symbol": "counter"})),
        (
            "debug_dump_symbol_ihex",
            json!({"symbol": "g_u32", "output_path": "fw/dumps/g_u32.hex"}),
        ),
        ("debug_clear_breakpoints", json!({})),
        ("debug_get_session_status", json!({})),
        ("debug_stop_session", json!({})),
        ("hardware_lease_status", json!({})),
        ("get_last_report", json!({})),
        ("classify_last_error", json!({})),
        ("project_config_describe", json!({})),
        ("com_ports_list", json!({})),
    ];
    for (tool, args) in calls {
        let doc = call_and_check(&client, &forbidden, tool, args).await;
        if tool == "debug_continue" {
            assert_eq!(
                doc["stop_reason"], "breakpoint_hit",
                "the session ran: {doc}"
            );
        }
    }
    client.cancel().await.expect("client closes");
    for args in [
        &["sim", "status", "--json"][..],
        &["sim", "status"],
        &["lease-status", "--json"],
        &["doctor", "--json"],
        &["watch", "--once", "--width", "300", "--height", "60"],
    ] {
        let out = planted(&world).args(args).output().expect("the CLI runs");
        forbidden.output(&format!("`{}`", args.join(" ")), &out);
    }
    let plans = world.workspace.join("plans");
    std::fs::create_dir_all(&plans).expect("plans dir");
    std::fs::write(
        plans.join("fails.yaml"),
        "version: 5\nname: fails\nsteps:\n\
         - {device: board, action: reset, mode: run}\n\
         - {device: uart, action: uart_open}\n\
         - {device: uart, action: uart_expect, text: \"never printed\", timeout_s: 1}\n\
         - {device: uart, action: uart_close}\n",
    )
    .expect("plan written");
    let out = planted(&world)
        .args(["test-reactor", "--test-config", "plans/fails.yaml"])
        .args(["--junit-xml", "out/junit.xml", "--json"])
        .output()
        .expect("test-reactor runs");
    forbidden.output("`test-reactor --junit-xml`", &out);
    let junit =
        std::fs::read_to_string(world.workspace.join("out/junit.xml")).unwrap_or_else(|err| {
            panic!(
                "the run wrote its JUnit XML ({err}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
    forbidden.check("out/junit.xml", &junit);
    let out = planted(&world)
        .args(["sim", "stop", "--json"])
        .output()
        .expect("sim stop runs");
    forbidden.output("`sim stop --json`", &out);
    let mut files = Vec::new();
    workspace_files(&world.workspace.join(".agentic-hil"), &mut files);
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().contains("gdb-debug-")),
        "the debug session wrote its log: {files:?}"
    );
    for file in &files {
        let text = String::from_utf8_lossy(&std::fs::read(file).expect("readable")).into_owned();
        forbidden.check(&format!("{}", file.display()), &text);
    }
}

#[tokio::test]
async fn a_backends_words_in_progress_and_in_the_log_pass_the_output_step() {
    let world = World::new();
    let state = world.home.join(".local/state/agentic-hil");
    let masked = "connect password=[redacted] with ~/tools/probe.cfg";
    let place = format!("{}/tools/probe.cfg", world.home.display());
    backend_words_pass_the_output_step(&world, &state, &place, masked).await;
}

#[tokio::test]
async fn a_state_root_outside_home_is_masked_in_the_log_as_in_results() {
    // The logger starts before any configuration loads; the state root it learns later is the
    // configuration's own, outside HOME, where no default would find it.
    let world = World::new();
    let state = world
        .home
        .parent()
        .expect("the world has a root")
        .join("lab-state");
    let place = format!("{}/coordination/probe.cfg", state.display());
    let masked = "connect password=[redacted] with <state_root>/coordination/probe.cfg";
    backend_words_pass_the_output_step(&world, &state, &place, masked).await;
}

/// A flash whose probe-rs worker (the debug build's seam) reports a stage in a leaky library's
/// words: a password and the absolute path `place`; progress and the server's log show `masked`.
async fn backend_words_pass_the_output_step(
    world: &World,
    state: &std::path::Path,
    place: &str,
    masked: &str,
) {
    use rmcp::ServiceExt;

    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: board\n  controller: stm32f405\n\
         debuggers:\n  probe:\n    type: probe-rs\n    target_type: STM32F405RGTx\n\
         \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
         artifacts:\n  allowed_roots: [fw]\n",
        ws = world.workspace.display(),
        state = state.display(),
    );
    let mut forbidden = configure(world, &config);
    forbidden.paths.push(state.display().to_string());
    let log = world.home.join("server.log");
    let mut cmd = planted(world);
    let words = format!("stage:connect password=BACKENDSECRET with {place}");
    cmd.arg("mcp-stdio")
        .env("AGENTIC_HIL_LOG", "debug")
        .env("AHIL_TEST_PROBE_RS_WORKER", words);
    let (transport, _) =
        rmcp::transport::TokioChildProcess::builder(tokio::process::Command::from(cmd))
            .stderr(std::fs::File::create(&log).expect("the log file"))
            .spawn()
            .expect("the server process starts");
    let collector = support::Collector::default();
    let client = collector
        .clone()
        .serve(transport)
        .await
        .unwrap_or_else(|err| {
            let logged = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("the MCP handshake succeeds: {err}; the server said: {logged}")
        });
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.set_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::Number(7),
    ));
    let mut request = rmcp::model::CallToolRequestParams::new("flash_firmware").with_arguments(
        json!({"image_path": "fw/fw.elf", "reset_after_flash": false})
            .as_object()
            .cloned()
            .expect("an object"),
    );
    request.meta = Some(meta);
    let answer = client.call_tool(request).await.expect("tools/call answers");
    forbidden.check(
        "the flash result",
        &serde_json::to_string(&answer).expect("serializes"),
    );
    client.cancel().await.expect("client closes");

    let progress: Vec<String> = collector
        .0
        .lock()
        .expect("collector")
        .iter()
        .filter_map(|p| p.message.clone())
        .collect();
    let shown = progress.join("\n");
    forbidden.check("progress", &shown);
    let logged = std::fs::read_to_string(&log).expect("the log reads");
    forbidden.check("the server's log", &logged);
    // The worker's words did arrive, masked: the step is proven, not silence.
    assert!(shown.contains(masked), "progress shows {masked}: {shown}");
    assert!(
        logged.contains("probe-rs worker stage") && logged.contains(masked),
        "the log shows {masked}: {logged}"
    );
}

/// The agent's `.mcp.json` may name any HOME; backends still run with the account's own (the
/// password database's), and print paths below it. Every sink shows the account's home as `~`
/// too, the workspace mirrors as well as the results they copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_the_agent_names_elsewhere_unmasks_no_path_below_the_accounts_home() {
    let bench = Bench::new();
    bench.scenario("ok");
    let elsewhere = bench.world.home.with_file_name("agent-home");
    std::fs::create_dir_all(&elsewhere).expect("the agent's HOME");
    let forbidden = Forbidden {
        paths: vec![bench.world.home.display().to_string()],
    };
    let agents_home = || {
        let mut cmd = bench.command();
        cmd.env("HOME", &elsewhere);
        cmd
    };
    let client = support::connect_command(agents_home()).await;
    let mut answers = Vec::new();
    for tool in ["probe_target", "flash_firmware", "reset_target"] {
        answers.push(call_and_check(&client, &forbidden, tool, arguments(tool)).await);
    }
    bench.scenario("target-absent");
    answers.push(call_and_check(&client, &forbidden, "probe_target", json!({})).await);
    bench.scenario("ok");
    client.cancel().await.expect("client closes");
    let all = Value::Array(answers).to_string();
    assert!(
        all.contains("~/tools/openocd.py"),
        "the results name the account's tool by `~`: {all}"
    );
    for args in [
        &["doctor", "--json"][..],
        &["lease-status", "--json"],
        &["doctor"],
    ] {
        let out = agents_home().args(args).output().expect("the CLI runs");
        forbidden.output(&format!("`{}`", args.join(" ")), &out);
    }
    let mut files = Vec::new();
    workspace_files(&bench.world.workspace.join(".agentic-hil"), &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("last-failure.json")),
        "the failed probe wrote its mirror: {files:?}"
    );
    for file in &files {
        let text = String::from_utf8_lossy(&std::fs::read(file).expect("readable")).into_owned();
        forbidden.check(&format!("{}", file.display()), &text);
    }
}
