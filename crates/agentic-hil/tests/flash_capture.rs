//! Black-box, end to end: `flash_firmware` with `capture` on the CLI backends. Each backend is
//! `ahil-sim`'s scripted fake, which notes every reset that lets the board run in `board-resets`;
//! the board is a pty whose far end (a small python process) prints its boot text at each such
//! reset, so the capture can only see it if the port was open across the flash and its reset.

mod support;

use std::path::PathBuf;

use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::World;
use support::call;
use support::raw::BootBoard;

type Client = RunningService<rmcp::RoleClient, ()>;

struct Bench {
    world: World,
    tools: PathBuf,
    /// The image this backend takes (esptool writes raw images).
    image: &'static str,
    _board: BootBoard,
    _esp_port: Option<BootBoard>,
}

fn fake_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ahil-sim/src/fakes/probe_cli.py")
}

impl Bench {
    /// One debugger of `kind` (the fake) and a `console` port on the boot board; `version` and
    /// `console_grants` set the configuration version and the console's permissions block.
    fn new(kind: &str, version: u8, console_grants: &str) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let tools = world.home.join("tools");
        std::fs::create_dir_all(&tools).expect("tools dir");
        let exe = tools.join(match kind {
            "openocd" => "openocd.py",
            "pyocd" => "pyocd.py",
            "esptool" => "esptool.py",
            _ => "STM32_Programmer_CLI.py",
        });
        std::fs::copy(fake_script(), &exe).expect("the fake is installed");
        std::fs::write(tools.join("fake-scenario"), "ok").expect("scenario");
        let board = BootBoard::start(&tools.join("board-resets"), &tools.join("board-booted"));
        // esptool flashes through its own port: another pty, which never resets anything.
        let esp_port = (kind == "esptool")
            .then(|| BootBoard::start(&tools.join("never"), &tools.join("never-booted")));
        let (debugger_type, entry, extra_port) = match (kind, &esp_port) {
            ("esptool", Some(port)) => (
                "esptool",
                "    com_port: flashport\n    flash_address: \"0x10000\"\n",
                format!(
                    "  flashport:\n    device: \"{}\"\n    identity_source: device\n",
                    port.device
                ),
            ),
            ("pyocd", _) => ("pyocd", "    probe_id: E6614103E7\n", String::new()),
            ("stlink", _) => ("stlink", "", String::new()),
            _ => ("openocd", "", String::new()),
        };
        let state = world.home.join(".local/state/agentic-hil");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: {version}\n\
             target:\n  name: board\n  controller: stm32f405\n\
             debuggers:\n  probe:\n    type: {debugger_type}\n    executable: \"{exe}\"\n{entry}\
             \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
             com_ports:\n  console:\n    device: \"{device}\"\n    identity_source: device\n\
             \x20   permissions:\n{console_grants}{extra_port}\
             artifacts:\n  allowed_roots: [fw]\n",
            ws = world.workspace.display(),
            state = state.display(),
            exe = exe.display(),
            device = board.device,
        );
        std::fs::write(world.config_path(), config).expect("the test config is written");
        let fw = world.workspace.join("fw");
        std::fs::create_dir_all(&fw).expect("fw dir");
        let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
        std::fs::copy(built.join("ahil-fw-v1.elf"), fw.join("fw.elf")).expect("firmware copies");
        std::fs::write(fw.join("fw.bin"), [0xE9_u8; 256]).expect("bin image");
        Self {
            world,
            tools,
            image: if kind == "esptool" {
                "fw/fw.bin"
            } else {
                "fw/fw.elf"
            },
            _board: board,
            _esp_port: esp_port,
        }
    }

    fn readable(kind: &str) -> Self {
        Self::new(kind, 3, "      allow_write: false\n")
    }

    fn scenario(&self, scenario: &str) {
        std::fs::write(self.tools.join("fake-scenario"), scenario).expect("scenario");
    }

    fn calls(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.tools.join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("call line"))
            .collect()
    }

    async fn connect(&self) -> Client {
        support::connect(&self.world).await
    }
}

fn flash_with_capture(image: &str, until: &str, wait_s: f64) -> Value {
    json!({
        "image_path": image,
        "reset_after_flash": true,
        "capture": {"port_id": "console", "until": until, "wait_timeout_s": wait_s},
    })
}

/// Flashes with a capture until "boot ok", checks the capture, then that the port was given back.
async fn captures_the_boot_text(kind: &str) {
    let bench = Bench::readable(kind);
    let client = bench.connect().await;
    let result = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("flash_firmware").with_arguments(
                flash_with_capture(bench.image, "boot ok", 20.0)
                    .as_object()
                    .cloned()
                    .expect("object"),
            ),
        )
        .await
        .expect("tools/call answers");
    let doc = result.structured_content.clone().expect("envelope");
    support::check_result("flash_firmware", &doc);
    assert_ne!(result.is_error, Some(true), "{kind}: {doc}");
    let capture = &doc["capture"];
    assert_eq!(capture["port_id"], json!("console"), "{doc}");
    assert_eq!(capture["until_matched"], json!(true), "{doc}");
    assert_eq!(capture["matched"], json!("boot ok"), "{doc}");
    let text = capture["text"].as_str().unwrap_or_default();
    assert!(text.contains("rom: boot"), "{kind}: {text:?}");
    assert!(
        text.ends_with("boot ok"),
        "the read ends at its until: {text:?}"
    );
    assert_eq!(capture["bytes_read"], json!(text.len()));
    assert_eq!(capture["data"]["text"], json!(text));
    support::assert_capture_log(&bench.world.workspace, capture);
    let whole = serde_json::to_value(&result).expect("the result serializes");
    let untrusted = &whole["_meta"]["agentic_hil/untrusted_content"];
    assert_eq!(untrusted["source"], json!("device"), "{whole}");
    assert_eq!(untrusted["port_id"], json!("console"));
    let flashed = bench
        .calls()
        .iter()
        .filter(|c| c.first().map(String::as_str) != Some("json"))
        .count();
    assert!(flashed >= 1, "the backend ran");
    // Closed and unlocked: a session opens the port right after.
    let (session, is_error) =
        call(&client, "com_session_start", json!({"port_id": "console"})).await;
    assert!(
        !is_error,
        "{kind}: the capture gave the port back: {session}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn openocd_flash_captures_the_boot_text_printed_after_its_reset() {
    captures_the_boot_text("openocd").await;
}

#[tokio::test]
async fn pyocd_flash_captures_the_boot_text_printed_after_its_reset() {
    captures_the_boot_text("pyocd").await;
}

#[tokio::test]
async fn stm32cubeprogrammer_flash_captures_the_boot_text_printed_after_its_reset() {
    captures_the_boot_text("stlink").await;
}

#[tokio::test]
async fn esptool_flash_captures_the_boot_text_printed_after_its_reset() {
    captures_the_boot_text("esptool").await;
}

#[tokio::test]
async fn a_capture_port_without_its_read_grant_is_refused_before_the_backend_runs() {
    let bench = Bench::new("openocd", 1, "      allow_read: false\n");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        flash_with_capture(bench.image, "boot ok", 5.0),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("permission_denied"), "{doc}");
    assert_eq!(
        doc["permission"],
        json!("com_ports.console.permissions.allow_read")
    );
    assert_eq!(doc["target_contacted"], json!(false));
    assert!(
        bench.calls().is_empty(),
        "the backend never ran: {:?}",
        bench.calls()
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_capture_port_held_by_a_com_session_is_refused_before_the_backend_runs() {
    let bench = Bench::readable("openocd");
    let client = bench.connect().await;
    let (session, is_error) =
        call(&client, "com_session_start", json!({"port_id": "console"})).await;
    assert!(!is_error, "{session}");
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        flash_with_capture(bench.image, "boot ok", 5.0),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("com_port_busy"), "{doc}");
    assert_eq!(doc["held_by"], json!("com_session"));
    assert_eq!(doc["target_contacted"], json!(false));
    assert!(
        bench.calls().is_empty(),
        "the backend never ran: {:?}",
        bench.calls()
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_capture_that_never_sees_its_text_is_still_ok_with_until_matched_false_and_the_bytes_so_far()
 {
    let bench = Bench::readable("openocd");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        flash_with_capture(bench.image, "never printed", 1.0),
    )
    .await;
    // com_read's rule ("If until is not seen in time, the answer is still ok, with until_matched
    // false and the bytes so far"), which the capture follows.
    assert!(!is_error, "{doc}");
    assert_eq!(doc["error_type"], Value::Null, "{doc}");
    assert_eq!(doc["side_effect_status"], json!("committed"), "{doc}");
    assert_eq!(doc["capture"]["until_matched"], json!(false), "{doc}");
    assert_eq!(doc["capture"]["matched"], Value::Null);
    let text = doc["capture"]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("boot ok v1\r\nready"),
        "the bytes so far: {text:?}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_failed_flash_still_closes_the_capture_port_and_releases_its_lock() {
    let bench = Bench::readable("openocd");
    bench.scenario("flash-fail");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        flash_with_capture(bench.image, "boot ok", 5.0),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_ne!(
        doc["error_type"],
        Value::Null,
        "the flash's own failure: {doc}"
    );
    assert_eq!(doc["capture"]["until_matched"], json!(false), "{doc}");
    let (session, is_error) =
        call(&client, "com_session_start", json!({"port_id": "console"})).await;
    assert!(!is_error, "the port was given back: {session}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_capture_on_the_port_esptool_flashes_through_is_an_invalid_argument() {
    let bench = Bench::readable("esptool");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": bench.image, "reset_after_flash": true,
               "capture": {"port_id": "flashport", "until": "boot ok"}}),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("invalid_argument"), "{doc}");
    assert_eq!(doc["field"], json!("capture.port_id"));
    assert!(bench.calls().is_empty(), "esptool never ran");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_capture_port_another_server_holds_is_device_busy_before_the_backend_runs() {
    let bench = Bench::readable("openocd");
    let holder = bench.connect().await;
    let (session, is_error) =
        call(&holder, "com_session_start", json!({"port_id": "console"})).await;
    assert!(!is_error, "{session}");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        flash_with_capture(bench.image, "boot ok", 5.0),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("device_busy"), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false));
    assert!(
        bench.calls().is_empty(),
        "the backend never ran: {:?}",
        bench.calls()
    );
    client.cancel().await.expect("client closes");
    holder.cancel().await.expect("holder closes");
}

#[tokio::test]
async fn a_capture_without_until_answers_no_until_matched_as_com_read_does() {
    let bench = Bench::readable("openocd");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({
            "image_path": bench.image,
            "reset_after_flash": true,
            "capture": {"port_id": "console", "wait_timeout_s": 3.0},
        }),
    )
    .await;
    assert!(!is_error, "{doc}");
    let capture = &doc["capture"];
    assert_eq!(capture.get("until_matched"), None, "{doc}");
    assert_eq!(capture.get("matched"), None, "{doc}");
    let text = capture["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("rom: boot\r\nboot ok v1\r\nready"),
        "the whole boot output of the window: {text:?}"
    );
    client.cancel().await.expect("client closes");
}

#[test]
fn a_flash_cancelled_while_its_com_capture_waits_ends_at_once_and_gives_the_port_back() {
    let bench = Bench::readable("openocd");
    let mut server = support::raw::Mcp::ours(&bench.world);
    let args = flash_with_capture(bench.image, "never printed", 30.0);
    support::cancel_the_flash_once_its_capture_waits(&mut server, &args);
    let (report, waited) =
        support::flash_report_after(&bench.world.workspace, std::time::Instant::now());
    // The cancel came after the flash: the image is on the board, only the capture was cut short.
    support::assert_the_capture_was_cut_short(&bench.world, &report);
    assert!(
        waited < std::time::Duration::from_secs(5),
        "the flash waited {waited:?} for its capture after the cancel: {report}"
    );
    let session = server.envelope("com_session_start", &json!({"port_id": "console"}));
    assert_eq!(
        session["ok"], true,
        "the capture gave the port back: {session}"
    );
}
