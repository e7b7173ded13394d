//! Black-box: the server started the way an agent's `.mcp.json` could start it, with PATH and
//! PYTHONPATH pointing into the workspace, where a look-alike of every program the gate may start
//! (and a `sitecustomize.py`) records that it ran. Every tool that starts a program is driven; each
//! still works, and no look-alike ever runs. With a HOME pointed into the workspace (with a
//! `usercustomize.py` in its Python user site) the server runs no child at all.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{Client, World, call, ok};

/// Every program name the gate might look up or start, and the names Python and gdb consult.
const LOOKALIKES: &[&str] = &[
    "cargo",
    "rustup",
    "python",
    "python3",
    "python3.11",
    "sh",
    "bash",
    "dash",
    "env",
    "sleep",
    "kill",
    "gdb",
    "gdb-multiarch",
    "arm-none-eabi-gdb",
    "openocd",
    "qemu-system-arm",
    "ip",
    "pyocd",
    "esptool",
    "esptool.py",
    "STM32_Programmer_CLI",
    "ST-LINK_gdbserver",
    "probe-rs",
    "agentic-hil",
];

const GRANTS: &str = "    permissions:\n      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n";

/// A world whose configuration has an emulated board, a CLI backend (a fake OpenOCD, pinned by its
/// absolute path outside the workspace), and a CAN process bridge; its board runs.
struct Hostile {
    kind: Kind,
    world: World,
    /// Where a look-alike that ran leaves its mark.
    marks: PathBuf,
    /// The look-alikes, first on the server's PATH.
    bin: PathBuf,
    /// The server's PYTHONPATH, holding a `sitecustomize.py`.
    python: PathBuf,
}

/// Which bench the world's configuration describes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An emulated board (running) and a CAN process bridge.
    Board,
    /// One CLI backend: a fake OpenOCD, pinned by its absolute path outside the workspace.
    Cli,
    /// Debian's own OpenOCD with its own board scripts, which `find` the scripts they source in
    /// `~/.openocd` before OpenOCD's own folder.
    RealOpenocd,
}

impl Hostile {
    fn new(kind: Kind) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let openocd = support::fakes::install_probe_cli(&world, "openocd.py", "ok");
        let bridge = world.write_fake_tool(
            "bridge",
            &format!(
                "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 0\n",
                support::can_bridge_simulator().display()
            ),
        );
        let state = world.home.join(".local/state/agentic-hil");
        let debugger = match kind {
            Kind::Board => format!("  board:\n    type: qemu\n    timeout_s: 10\n{GRANTS}"),
            Kind::Cli => format!(
                "  cli:\n    type: openocd\n    executable: \"{}\"\n    probe_id: SIM0\n    \
                 interface_cfg: interface/stlink.cfg\n    target_cfg: target/stm32f4x.cfg\n    timeout_s: 10\n{GRANTS}",
                openocd.display()
            ),
            Kind::RealOpenocd => format!(
                "  cli:\n    type: openocd\n    executable: /usr/bin/openocd\n    probe_id: SIM0\n    \
                 interface_cfg: /usr/share/openocd/scripts/interface/stlink.cfg\n    \
                 target_cfg: /usr/share/openocd/scripts/target/stm32f4x.cfg\n    timeout_s: 10\n{GRANTS}"
            ),
        };
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: sim\n  controller: stm32f405\n\
             debuggers:\n{debugger}\
             artifacts:\n  allowed_roots: [fw]\n\
             permissions:\n  allow_upgrade: true\n\
             can_buses:\n  ecu:\n    adapter: process\n    channel: sim-ecu\n    executable: \"{bridge}\"\n    \
             timeout_s: 2\n    permissions:\n      allow_write: true\n",
            ws = world.workspace.display(),
            state = state.display(),
            bridge = bridge.display(),
        );
        std::fs::write(world.config_path(), config).expect("the test config is written");
        support::sim_board::copy_firmware(&world, &["ahil-fw-v1.elf"]);
        if kind == Kind::Board {
            let (doc, code) = world.run_json(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"]);
            assert_eq!(code, Some(0), "sim start: {doc}");
        }

        let marks = world.workspace.join("ran");
        let bin = world.workspace.join("bin");
        let python = world.workspace.join("pylib");
        for dir in [&marks, &bin, &python, &world.workspace.join("tmp")] {
            std::fs::create_dir_all(dir).expect("dir");
        }
        for name in LOOKALIKES {
            let path = bin.join(name);
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\necho \"$0 $*\" > '{}'\nexit 0\n",
                    marks.join(name).display()
                ),
            )
            .expect("a look-alike");
            support::make_executable(&path);
        }
        std::fs::write(
            python.join("sitecustomize.py"),
            format!(
                "open({:?}, 'w').write('sitecustomize ran')\n",
                marks.join("sitecustomize").display().to_string()
            ),
        )
        .expect("sitecustomize");
        Self {
            kind,
            world,
            marks,
            bin,
            python,
        }
    }

    /// The server, started with the agent's PATH and PYTHONPATH (and more of what `.mcp.json` sets).
    async fn connect(&self) -> Client {
        self.connect_with_home(&self.world.home).await
    }

    /// `connect`, with the HOME the agent's `.mcp.json` chose.
    async fn connect_with_home(&self, home: &Path) -> Client {
        let mut cmd = std::process::Command::new(World::binary());
        self.world.scrub(&mut cmd);
        cmd.env("HOME", home);
        let mut path = self.bin.clone().into_os_string();
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        cmd.env("PATH", path)
            .env("PYTHONPATH", &self.python)
            .env("PYTHONSTARTUP", self.python.join("sitecustomize.py"))
            .env("CARGO_HOME", self.world.workspace.join("cargo"))
            .env("TMPDIR", self.tmp());
        support::connect_command(cmd).await
    }

    /// The server's TMPDIR, in the workspace.
    fn tmp(&self) -> PathBuf {
        self.world.workspace.join("tmp")
    }

    /// The marks left so far: which look-alikes ran.
    fn ran(&self) -> Vec<String> {
        let mut ran: Vec<String> = std::fs::read_dir(&self.marks)
            .expect("marks dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        ran.sort();
        ran
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if self.kind == Kind::Board {
            let _ = self.world.run(&["sim", "stop"]);
        }
    }
}

fn assert_none_ran(bench: &Hostile, after: &str, doc: &Value) {
    let ran = bench.ran();
    assert!(
        ran.is_empty(),
        "after {after}, look-alikes ran: {ran:?}\n{doc}"
    );
}

#[tokio::test]
async fn no_tool_runs_a_program_or_python_code_the_servers_path_or_pythonpath_names() {
    let bench = Hostile::new(Kind::Board);
    let client = bench.connect().await;

    let doc = ok(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v1.elf", "reset_after_flash": true}),
    )
    .await;
    assert_none_ran(&bench, "flash_firmware", &doc);
    // The staged copy of the image never lives where the agent's TMPDIR points (the workspace),
    // where it could be swapped between its check and the flash.
    let staged: Vec<_> = std::fs::read_dir(bench.tmp())
        .expect("the agent's TMPDIR")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(
        staged.is_empty(),
        "staged under the agent's TMPDIR: {staged:?}"
    );

    let doc = ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v1.elf"}),
    )
    .await;
    assert_eq!(doc["session"]["status"], "halted", "{doc}");
    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_none_ran(&bench, "a debug session", &doc);

    let doc = ok(&client, "can_session_start", json!({"bus_id": "ecu"})).await;
    let doc2 = ok(&client, "can_session_stop", json!({"bus_id": "ecu"})).await;
    assert_none_ran(&bench, "a CAN process bridge", &json!([doc, doc2]));

    // Not a cargo install (the test binary sits in target/): the upgrade refuses without running
    // any cargo, and without looking for one on PATH or in CARGO_HOME.
    let (doc, is_error) = call(&client, "server_upgrade", json!({})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "upgrade_manager_not_found", "{doc}");
    assert_none_ran(&bench, "server_upgrade", &doc);

    client.cancel().await.expect("the session closes");
    assert!(
        Path::new(&bench.marks).is_dir(),
        "the marks directory is the one the look-alikes write to"
    );
}

#[tokio::test]
async fn a_cli_backends_configured_python_fake_runs_without_the_servers_path_or_pythonpath() {
    let bench = Hostile::new(Kind::Cli);
    let client = bench.connect().await;
    let doc = ok(&client, "debugger_info", json!({})).await;
    assert!(
        doc["version"].as_str().is_some_and(|v| !v.is_empty()),
        "the configured fake answered: {doc}"
    );
    assert_none_ran(&bench, "debugger_info", &doc);
    let doc = ok(&client, "debugger_probes_list", json!({})).await;
    assert_none_ran(&bench, "debugger_probes_list", &doc);
    let doc = ok(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v1.elf", "reset_after_flash": true}),
    )
    .await;
    assert_none_ran(&bench, "flash_firmware through the CLI backend", &doc);
    client.cancel().await.expect("the session closes");
}

/// Python's user site under `home`, where `usercustomize.py` is imported from at every start.
fn user_site(home: &Path) -> PathBuf {
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import site; print(site.getusersitepackages())"])
        .env_clear()
        .env("HOME", home)
        .output()
        .expect("python3 runs");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A `usercustomize.py` in a HOME inside the workspace that records when Python imports it.
fn plant_usercustomize(bench: &Hostile) -> PathBuf {
    let home = bench.world.workspace.join("fakehome");
    plant_usercustomize_in(bench, &home);
    home
}

/// A `usercustomize.py` in `home`'s Python user site that records when Python imports it.
fn plant_usercustomize_in(bench: &Hostile, home: &Path) {
    let site = user_site(home);
    assert!(site.starts_with(home), "{}", site.display());
    std::fs::create_dir_all(&site).expect("user site");
    std::fs::write(
        site.join("usercustomize.py"),
        format!(
            "open({:?}, 'w').write('usercustomize ran')\n",
            bench.marks.join("usercustomize").display().to_string()
        ),
    )
    .expect("usercustomize");
}

/// Children get the server's HOME (where it found the operator's configuration), so with a HOME the
/// agent points into the workspace the server must run nothing: there, `usercustomize.py` would run
/// inside every Python backend and `~/.openocd` would feed OpenOCD its scripts. It still answers (a
/// host shows why), and every call that would start a backend is `workspace_is_home`.
#[tokio::test]
async fn a_home_the_agent_points_into_the_workspace_runs_no_child_and_answers_workspace_is_home() {
    let bench = Hostile::new(Kind::Cli);
    let home = plant_usercustomize(&bench);
    // XDG_* still name the operator's configuration (World::scrub sets them).
    let client = bench.connect_with_home(&home).await;
    for (tool, args) in [
        ("debugger_info", json!({})),
        ("debugger_probes_list", json!({})),
        (
            "flash_firmware",
            json!({"image_path": "fw/ahil-fw-v1.elf", "reset_after_flash": true}),
        ),
    ] {
        let (doc, is_error) = call(&client, tool, args).await;
        assert!(is_error, "{tool}: {doc}");
        assert_eq!(doc["error_type"], "workspace_is_home", "{tool}: {doc}");
        assert_none_ran(&bench, tool, &doc);
    }
    client.cancel().await.expect("the session closes");
}

/// The calls that start a Python backend (the fake OpenOCD is a Python script).
fn backend_calls() -> [(&'static str, Value); 3] {
    [
        ("debugger_info", json!({})),
        ("debugger_probes_list", json!({})),
        (
            "flash_firmware",
            json!({"image_path": "fw/ahil-fw-v1.elf", "reset_after_flash": true}),
        ),
    ]
}

/// A HOME is judged where the kernel takes it, not where its spelling folds to: `<ws>/hop/../..`
/// folds lexically to the workspace's parent, but `hop` is a link two folders deep into the
/// workspace's `fakehome`, so every open through that HOME lands in the workspace: OpenOCD's board
/// scripts `find` what they source in its `~/.openocd` first, and a Tcl script there runs `exec`.
#[tokio::test]
async fn a_home_spelled_to_climb_out_through_a_link_that_leads_into_the_workspace_is_workspace_is_home()
 {
    let bench = Hostile::new(Kind::RealOpenocd);
    let home = bench.world.workspace.join("fakehome");
    let scripts = home.join(".openocd").join("target");
    std::fs::create_dir_all(&scripts).expect("the agent's OpenOCD scripts");
    std::fs::write(
        scripts.join("swj-dp.tcl"),
        format!(
            "exec touch {}\n",
            bench.marks.join("openocd-home-script").display()
        ),
    )
    .expect("a script OpenOCD's stm32f4x.cfg sources");
    let deep = home.join("a").join("b");
    std::fs::create_dir_all(&deep).expect("deep folder");
    let hop = bench.world.workspace.join("hop");
    std::os::unix::fs::symlink(&deep, &hop).expect("link");
    let spelled = hop.join("..").join("..");
    assert_eq!(
        std::fs::canonicalize(&spelled).expect("resolves"),
        home,
        "the kernel takes the spelling into the workspace"
    );
    let client = bench.connect_with_home(&spelled).await;
    let mut answers = Vec::new();
    for (tool, args) in backend_calls() {
        answers.push((tool, call(&client, tool, args).await));
    }
    assert_none_ran(&bench, "every call", &json!(format!("{answers:?}")));
    for (tool, (doc, is_error)) in answers {
        assert!(is_error, "{tool}: {doc}");
        assert_eq!(doc["error_type"], "workspace_is_home", "{tool}: {doc}");
    }
    client.cancel().await.expect("the session closes");
}

/// OpenOCD's `find` looks in its working directory before any script folder, and the server runs in
/// the workspace: a CLI backend runs in its own directory, so the scripts Debian's board files source
/// are never taken from a copy the agent planted in the workspace.
#[tokio::test]
async fn openocd_never_finds_the_scripts_it_sources_in_the_workspace() {
    let bench = Hostile::new(Kind::RealOpenocd);
    for script in [
        "target/swj-dp.tcl",
        "mem_helper.tcl",
        "interface/stlink-dap.cfg",
    ] {
        let path = bench.world.workspace.join(script);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("folder");
        let mark = bench.marks.join(script.replace('/', "-"));
        std::fs::write(&path, format!("exec touch {}\n", mark.display())).expect("script");
    }
    let client = bench.connect().await;
    let mut answers = Vec::new();
    for (tool, args) in backend_calls() {
        answers.push((tool, call(&client, tool, args).await));
    }
    assert_none_ran(&bench, "every call", &json!(format!("{answers:?}")));
    let (doc, _) = &answers[2].1;
    assert_eq!(doc["tool"], "flash_firmware", "{doc}");
    assert!(
        doc.to_string().contains("openocd"),
        "OpenOCD ran the flash: {doc}"
    );
    client.cancel().await.expect("the session closes");
}

/// An ELF names scripts for gdb to run in its `.debug_gdb_scripts` section, inline Python among them,
/// and gdb loads the agent's image; only gdb's `auto-load safe-path` refuses them, and that is the
/// build's or the operator's setting (a gdb built without one, or a wrapper that trusts every path).
/// gdb is started with auto-load off, so the image's scripts never run whatever that setting is.
#[tokio::test]
async fn scripts_an_image_names_for_gdb_never_run_even_in_a_gdb_that_trusts_every_path() {
    let bench = Hostile::new(Kind::Board);
    let gdb = bench.world.write_fake_tool(
        "trusting-gdb",
        "#!/bin/sh\nexec /usr/bin/gdb-multiarch -iex 'set auto-load safe-path /' \"$@\"\n",
    );
    let config = bench.world.config_path();
    let text = std::fs::read_to_string(&config).expect("config");
    let text = format!("{text}debug:\n  gdb_executable: \"{}\"\n", gdb.display());
    std::fs::write(&config, text).expect("the trusting gdb is pinned");

    let fw = bench.world.workspace.join("fw");
    let mut section = b"\x04gdb.inlined-script\n".to_vec();
    section.extend(
        format!(
            "open({:?}, 'w').write('ran')\n\0",
            bench.marks.join("gdb-inline-script").display().to_string()
        )
        .bytes(),
    );
    std::fs::write(fw.join("scripts.bin"), section).expect("section");
    let out = std::process::Command::new("/usr/bin/arm-none-eabi-objcopy")
        .current_dir(&fw)
        .args([
            "--add-section",
            ".debug_gdb_scripts=scripts.bin",
            "--set-section-flags",
            ".debug_gdb_scripts=readonly,debug",
            "ahil-fw-v1.elf",
            "scripted.elf",
        ])
        .output()
        .expect("objcopy runs");
    assert!(out.status.success(), "{out:?}");
    std::fs::remove_file(fw.join("scripts.bin")).expect("section removed");

    let client = bench.connect().await;
    let doc = ok(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/scripted.elf", "reset_after_flash": true}),
    )
    .await;
    assert_none_ran(&bench, "flash_firmware", &doc);
    let doc = ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/scripted.elf"}),
    )
    .await;
    let stopped = ok(&client, "debug_stop_session", json!({})).await;
    assert_none_ran(&bench, "a debug session", &json!([doc, stopped]));
    client.cancel().await.expect("the session closes");
}

/// Children are given the account's home, never the HOME the agent's `.mcp.json` names: a HOME
/// outside the workspace is not the agent's to write, but it may be anyone's (`/tmp`, another
/// checkout), and a Python backend imports the `usercustomize.py` of whatever home it is given.
#[tokio::test]
async fn a_home_outside_the_workspace_that_holds_a_usercustomize_never_reaches_a_child() {
    let bench = Hostile::new(Kind::Cli);
    let shared = tempfile::tempdir().expect("a folder outside the workspace");
    let home = std::fs::canonicalize(shared.path()).expect("resolves");
    plant_usercustomize_in(&bench, &home);
    let client = bench.connect_with_home(&home).await;
    for (tool, args) in backend_calls() {
        let doc = ok(&client, tool, args).await;
        assert_none_ran(&bench, tool, &doc);
    }
    client.cancel().await.expect("the session closes");
}

/// The HOME the server judged at startup is the HOME every child gets: a HOME spelled through a link
/// in the workspace that led outside when the server started, and that the agent then points at a
/// home of its own, still gives each backend the home that was judged.
#[tokio::test]
async fn a_home_link_the_agent_repoints_after_startup_never_reaches_a_child() {
    let bench = Hostile::new(Kind::Cli);
    let planted = plant_usercustomize(&bench);
    let link = bench.world.workspace.join("homelink");
    std::os::unix::fs::symlink(&bench.world.home, &link).expect("link");
    let client = bench.connect_with_home(&link).await;
    let doc = ok(&client, "debugger_info", json!({})).await;
    assert_none_ran(&bench, "debugger_info before the link moved", &doc);
    std::fs::remove_file(&link).expect("unlink");
    std::os::unix::fs::symlink(&planted, &link).expect("relink");
    for (tool, args) in backend_calls() {
        let doc = ok(&client, tool, args).await;
        assert_none_ran(&bench, tool, &doc);
    }
    client.cancel().await.expect("the session closes");
}

#[test]
fn the_look_alikes_and_sitecustomize_do_record_that_they_ran() {
    // The detectors work: a look-alike run directly, and Python started with the server's
    // PYTHONPATH, each leave their mark.
    let bench = Hostile::new(Kind::Cli);
    let out = std::process::Command::new(bench.bin.join("gdb-multiarch"))
        .arg("--version")
        .output()
        .expect("the look-alike runs");
    assert!(out.status.success());
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "pass"])
        .env("PYTHONPATH", &bench.python)
        .output()
        .expect("python3 runs");
    assert!(out.status.success());
    let home = plant_usercustomize(&bench);
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "pass"])
        .env("HOME", &home)
        .output()
        .expect("python3 runs");
    assert!(out.status.success());
    assert_eq!(
        bench.ran(),
        ["gdb-multiarch", "sitecustomize", "usercustomize"]
    );
}
