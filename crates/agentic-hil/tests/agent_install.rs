//! Registering the server with agent hosts: each host's file in a temp HOME, idempotence, refusal over
//! an operator's entry, uninstall that leaves the operator's entries alone, and a fresh HOME taken from
//! `setup` to a server its host can launch.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::World;

const AGENTS: [&str; 6] = [
    "claude-code",
    "codex",
    "cursor",
    "vscode",
    "gemini",
    "opencode",
];

fn registration_file(home: &Path, agent: &str) -> PathBuf {
    home.join(match agent {
        "claude-code" => ".claude.json",
        "codex" => ".codex/config.toml",
        "cursor" => ".cursor/mcp.json",
        "vscode" => ".config/Code/User/mcp.json",
        "gemini" => ".gemini/settings.json",
        "opencode" => ".config/opencode/opencode.json",
        other => panic!("no host {other}"),
    })
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("the host file exists")).expect("JSON")
}

/// This world's own temp dir. The launcher rule is "not under the temp dir", and the binary under
/// test may itself live under /tmp (a CI checkout there), so each test names its own.
fn private_tmp(world: &World) -> PathBuf {
    let tmp = world.home.parent().expect("world root").join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp dir");
    tmp
}

/// `world.run_json` with the world's own temp dir.
fn run_json(world: &World, args: &[&str]) -> (Value, Option<i32>) {
    let out = world
        .command()
        .env("TMPDIR", private_tmp(world))
        .args(args)
        .arg("--json")
        .output()
        .expect("the binary runs");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout of {args:?} is one JSON document ({err}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (doc, out.status.code())
}

fn launcher() -> String {
    std::fs::canonicalize(World::binary())
        .expect("binary resolves")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn each_host_gets_the_entry_it_expects_and_a_second_run_writes_nothing() {
    let world = World::new();
    let exe = launcher();
    for agent in AGENTS {
        let (doc, code) = run_json(&world, &["agent-install", "--agent", agent]);
        assert_eq!(code, Some(0), "{agent}: {doc:#}");
        assert_eq!(doc["command"], json!(exe), "{agent}");
        assert_eq!(
            doc["steps"]["mcp_config"]["changed"],
            json!(true),
            "{agent}"
        );
    }
    let home = &world.home;
    let args = json!(["mcp-stdio"]);
    let claude = read_json(&registration_file(home, "claude-code"));
    assert_eq!(
        claude["mcpServers"]["agentic-hil"],
        json!({"type": "stdio", "command": exe, "args": args})
    );
    for agent in ["cursor", "gemini"] {
        let doc = read_json(&registration_file(home, agent));
        assert_eq!(
            doc["mcpServers"]["agentic-hil"],
            json!({"command": exe, "args": args}),
            "{agent}"
        );
    }
    let vscode = read_json(&registration_file(home, "vscode"));
    assert_eq!(
        vscode["servers"]["agentic-hil"],
        json!({"type": "stdio", "command": exe, "args": args})
    );
    let opencode = read_json(&registration_file(home, "opencode"));
    assert_eq!(
        opencode["mcp"]["agentic-hil"],
        json!({"type": "local", "command": [exe, "mcp-stdio"], "enabled": true})
    );
    let codex = std::fs::read_to_string(registration_file(home, "codex")).expect("codex config");
    assert_eq!(
        codex,
        format!(
            "[mcp_servers.agentic-hil]\ncommand = \"{exe}\"\nargs = [\"mcp-stdio\"]\nenabled = true\n"
        )
    );
    for skill in [
        ".claude/skills/agentic-hil/SKILL.md",
        ".codex/skills/agentic-hil/SKILL.md",
        ".config/opencode/skills/agentic-hil/SKILL.md",
    ] {
        let text = std::fs::read_to_string(home.join(skill)).expect("skill written");
        assert!(text.starts_with("---\nname: agentic-hil\n"), "{skill}");
    }
    assert!(
        std::fs::read_to_string(home.join(".codex/AGENTS.md"))
            .expect("AGENTS.md")
            .contains("~/.codex/skills/agentic-hil/SKILL.md")
    );

    let before: Vec<Vec<u8>> = AGENTS
        .iter()
        .map(|a| std::fs::read(registration_file(home, a)).expect("file"))
        .collect();
    for agent in AGENTS {
        let (doc, code) = run_json(&world, &["agent-install", "--agent", agent]);
        assert_eq!(code, Some(0), "{agent}: {doc:#}");
        assert_eq!(doc["restart_required"], json!(false), "{agent}: {doc:#}");
    }
    for (agent, bytes) in AGENTS.iter().zip(before) {
        assert_eq!(
            std::fs::read(registration_file(home, agent)).expect("file"),
            bytes,
            "{agent} unchanged"
        );
    }
}

#[test]
fn an_entry_the_operator_wrote_is_refused_without_force_and_nothing_is_left_behind() {
    let world = World::new();
    let file = world.home.join(".claude.json");
    let original = "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"agentic-hil\": {\"command\": \"/usr/local/bin/agentic-hil\", \"args\": [\"mcp-stdio\"], \"env\": {\"X\": \"1\"}},\n    \"other\": {\"command\": \"/bin/true\"}\n  },\n  \"theme\": \"dark\"\n}\n";
    std::fs::write(&file, original).expect("seed");

    let (doc, code) = run_json(&world, &["agent-install", "--agent", "claude-code"]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["error_type"], json!("mcp_config_conflict"), "{doc:#}");
    assert_eq!(std::fs::read_to_string(&file).expect("file"), original);
    // The skill written before the conflict was found is taken back.
    assert_eq!(doc["rollback"]["attempted"], json!(true), "{doc:#}");
    assert!(
        !world
            .home
            .join(".claude/skills/agentic-hil/SKILL.md")
            .exists()
    );

    let (doc, code) = run_json(
        &world,
        &["agent-install", "--agent", "claude-code", "--force"],
    );
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(doc["steps"]["mcp_config"]["replaced_foreign"], json!(true));
    let after = read_json(&file);
    let keys: Vec<&String> = after.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["numStartups", "mcpServers", "theme"], "order kept");
    let servers: Vec<&String> = after["mcpServers"]
        .as_object()
        .expect("servers")
        .keys()
        .collect();
    assert_eq!(servers, ["agentic-hil", "other"]);
    assert_eq!(
        after["mcpServers"]["other"],
        json!({"command": "/bin/true"})
    );
    assert_eq!(
        after["mcpServers"]["agentic-hil"]["command"],
        json!(launcher())
    );
}

#[test]
fn a_codex_table_the_operator_wrote_is_refused_and_force_keeps_the_rest_of_the_file() {
    let world = World::new();
    let file = world.home.join(".codex/config.toml");
    std::fs::create_dir_all(file.parent().expect("dir")).expect("dir");
    let original = "model = \"o3\"\n\n[mcp_servers.agentic-hil]\ncommand = \"agentic-hil\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n";
    std::fs::write(&file, original).expect("seed");
    let (doc, code) = run_json(&world, &["agent-install", "--agent", "codex"]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["error_type"], json!("mcp_config_conflict"), "{doc:#}");
    assert_eq!(std::fs::read_to_string(&file).expect("file"), original);

    let (doc, code) = run_json(&world, &["agent-install", "--agent", "codex", "--force"]);
    assert_eq!(code, Some(0), "{doc:#}");
    let text = std::fs::read_to_string(&file).expect("file");
    // Replaced where the operator had it; the tables around it are untouched.
    assert_eq!(
        text,
        format!(
            "model = \"o3\"\n\n[mcp_servers.agentic-hil]\ncommand = \"{}\"\nargs = [\"mcp-stdio\"]\nenabled = true\n\n[profiles.fast]\nmodel = \"o4-mini\"\n",
            launcher()
        )
    );
    assert_eq!(
        text.matches("[mcp_servers.agentic-hil]").count(),
        1,
        "{text}"
    );

    let (doc, code) = run_json(&world, &["uninstall", "--agent", "codex"]);
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        "model = \"o3\"\n\n[profiles.fast]\nmodel = \"o4-mini\"\n"
    );
}

#[test]
fn uninstall_takes_back_only_what_agentic_hil_wrote_and_names_what_it_kept() {
    let world = World::new();
    for agent in ["cursor", "opencode", "claude-code"] {
        let (doc, code) = run_json(&world, &["agent-install", "--agent", agent]);
        assert_eq!(code, Some(0), "{doc:#}");
    }
    // The operator adds a server of their own beside ours, and writes their own Gemini entry.
    let cursor = world.home.join(".cursor/mcp.json");
    let mut doc = read_json(&cursor);
    doc["mcpServers"]["mine"] = json!({"command": "/opt/mine"});
    std::fs::write(&cursor, serde_json::to_string(&doc).expect("json")).expect("write");
    let gemini = world.home.join(".gemini/settings.json");
    std::fs::create_dir_all(gemini.parent().expect("dir")).expect("dir");
    let foreign = r#"{"mcpServers": {"agentic-hil": {"command": "/opt/other/agentic-hil", "args": ["mcp-stdio"], "timeout": 5}}}"#;
    std::fs::write(&gemini, foreign).expect("seed");
    let skill = world.home.join(".claude/skills/agentic-hil/SKILL.md");
    std::fs::write(&skill, "my own notes\n").expect("operator's skill");

    let (doc, code) = run_json(&world, &["uninstall"]);
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(
        read_json(&cursor),
        json!({"mcpServers": {"mine": {"command": "/opt/mine"}}})
    );
    assert!(
        !world.home.join(".config/opencode").exists(),
        "the file and folders install created went"
    );
    assert!(
        !world
            .home
            .join(".config/opencode/skills/agentic-hil")
            .exists()
    );
    assert_eq!(std::fs::read_to_string(&gemini).expect("gemini"), foreign);
    assert_eq!(
        std::fs::read_to_string(&skill).expect("skill"),
        "my own notes\n"
    );
    let kept: Vec<&str> = doc["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .flat_map(|a| a["left_alone"].as_array().expect("list"))
        .map(|k| k["path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        kept,
        [
            "~/.claude/skills/agentic-hil/SKILL.md",
            "~/.gemini/settings.json"
        ]
    );
}

#[test]
fn a_skill_target_the_operator_wrote_is_not_replaced_without_force() {
    let world = World::new();
    let target = world.home.join("notes/SKILL.md");
    std::fs::create_dir_all(target.parent().expect("dir")).expect("dir");
    std::fs::write(&target, "mine\n").expect("seed");
    let target_arg = target.to_string_lossy().into_owned();
    let (doc, code) = run_json(&world, &["skill-install", "--target", &target_arg]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["error_type"], json!("skill_exists"), "{doc:#}");
    assert_eq!(std::fs::read_to_string(&target).expect("kept"), "mine\n");
    let (doc, code) = run_json(
        &world,
        &["skill-install", "--target", &target_arg, "--force"],
    );
    assert_eq!(code, Some(0), "{doc:#}");
    assert!(
        std::fs::read_to_string(&target)
            .expect("written")
            .contains("permission_denied")
    );

    let (doc, code) = run_json(&world, &["skill-install", "--agent", "cursor"]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["error_type"], json!("unsupported_agent"), "{doc:#}");
}

#[test]
fn a_launcher_in_the_temp_dir_or_the_workspace_is_refused() {
    let world = World::new();
    let copy = world.workspace.join("agentic-hil");
    std::fs::copy(World::binary(), &copy).expect("copy");
    let copy_arg = copy.to_string_lossy().into_owned();
    let (doc, code) = run_json(&world, &["agent-install", "--launcher", &copy_arg]);
    assert_eq!(code, Some(1));
    assert_eq!(
        doc["error_type"],
        json!("unsafe_configured_path"),
        "{doc:#}"
    );
    assert!(
        doc["summary"]
            .as_str()
            .expect("summary")
            .contains("workspace")
    );

    let in_temp = private_tmp(&world).join("agentic-hil");
    std::fs::copy(World::binary(), &in_temp).expect("copy");
    let (doc, code) = run_json(
        &world,
        &["agent-install", "--launcher", &in_temp.to_string_lossy()],
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        doc["error_type"],
        json!("unsafe_configured_path"),
        "{doc:#}"
    );
    assert!(!world.home.join(".claude.json").exists());
}

#[test]
fn setup_in_a_fresh_home_leaves_a_registered_server_that_lists_its_tools() {
    let world = World::new();
    let settings = world.home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().expect("dir")).expect("dir");
    let operator_settings = json!({"model": "opus", "permissions": {"deny": ["Bash(rm:*)"]}});
    std::fs::write(&settings, operator_settings.to_string()).expect("operator's settings");

    let (doc, code) = run_json(&world, &["setup", "--agent", "claude-code"]);
    assert_eq!(code, Some(0), "{doc:#}");
    assert!(world.config_path().exists(), "init wrote the configuration");
    // The closing advice is the next real step, not registering what setup just registered.
    let advice = doc["next_steps"].to_string();
    assert!(advice.contains("Restart Claude Code"), "{advice}");
    assert!(advice.contains("doctor"), "{advice}");
    assert!(!advice.contains("mcp-config"), "{advice}");
    let state_root = world.home.join(".local/state/agentic-hil");
    assert!(
        !doc.to_string().contains(&state_root.display().to_string()),
        "the state root's path is never printed: {doc:#}"
    );
    // Claude Code's edit tools are refused the configuration directory and the state root.
    let deny = read_json(&settings)["permissions"]["deny"].clone();
    let config_dir = world
        .config_path()
        .parent()
        .expect("dir")
        .display()
        .to_string();
    assert_eq!(
        deny,
        json!([
            "Bash(rm:*)",
            format!("Edit(/{config_dir}/**)"),
            format!("Edit(/{}/**)", state_root.display())
        ])
    );

    // Launch exactly what Claude Code would: the registered command and args, in the project.
    let claude = read_json(&world.home.join(".claude.json"));
    let entry = &claude["mcpServers"]["agentic-hil"];
    assert_eq!(entry["type"], json!("stdio"));
    assert_eq!(entry["args"], json!(["mcp-stdio"]));
    let command = PathBuf::from(entry["command"].as_str().expect("command"));
    assert!(command.is_absolute());
    let mut server = support::raw::Mcp::start(&world, &command);
    let tools = server.request("tools/list", &json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"flash_firmware"), "{names:?}");
    assert!(names.contains(&"project_config_describe"), "{names:?}");
    let described = server.call("project_config_describe", &json!({}));
    assert_ne!(described["isError"], json!(true), "{described:#}");
    server.close();

    let (doc, code) = run_json(&world, &["uninstall", "--agent", "claude-code"]);
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(
        read_json(&settings),
        operator_settings,
        "only our rules went"
    );
    assert!(
        world.config_path().exists(),
        "the project's configuration stays"
    );
    assert!(
        !world.home.join(".claude.json").exists(),
        "the registration went, with the file it created"
    );
}

#[test]
fn the_binary_prints_shell_completions_and_its_man_page() {
    let world = World::new();
    let out = world.run(&["completions", "zsh"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("#compdef agentic-hil"), "{text}");
    assert!(text.contains("agent-install"));
    let out = world.run(&["man"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(".TH agentic-hil 1"));
    assert!(text.contains(".TH agentic-hil-setup 1"));
    let out = world.run(&["completions", "tcsh"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn init_for_claude_code_adds_its_write_refusals_once() {
    let world = World::new();
    let (doc, code) = run_json(&world, &["init", "--agent", "claude-code"]);
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(
        doc["steps"]["agent_write_restriction"]["rules_added"],
        json!(2)
    );
    let settings = world.home.join(".claude/settings.json");
    let first = std::fs::read(&settings).expect("settings written");
    let (doc, code) = run_json(&world, &["init", "--agent", "claude-code"]);
    assert_eq!(code, Some(0), "{doc:#}");
    assert_eq!(
        doc["steps"]["agent_write_restriction"]["rules_added"],
        json!(0)
    );
    assert_eq!(std::fs::read(&settings).expect("settings"), first);
}

/// A settings file the operator left in a shape uninstall cannot read keeps agentic-hil's rules and
/// their ledger, and says so; once the file is repaired, uninstall takes the rules out.
#[test]
fn uninstall_keeps_the_write_refusals_and_their_ledger_while_the_settings_file_is_unreadable() {
    let world = World::new();
    let (doc, code) = run_json(&world, &["init", "--agent", "claude-code"]);
    assert_eq!(code, Some(0), "{doc:#}");
    let settings = world.home.join(".claude/settings.json");
    let ledger = world
        .home
        .join(".config/agentic-hil/claude-deny-rules.json");
    let good = std::fs::read_to_string(&settings).expect("settings written");
    assert!(good.contains("Edit(//"), "{good}");
    assert!(ledger.exists(), "init kept a ledger of its rules");
    std::fs::write(&settings, format!("[{good}]")).expect("the operator's mistake");

    let (doc, _) = run_json(&world, &["uninstall", "--agent", "claude-code"]);
    let kept: Vec<&Value> = doc["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .flat_map(|a| a["left_alone"].as_array().expect("list"))
        .filter(|k| k["what"] == "write-refusal rules")
        .collect();
    assert_eq!(kept.len(), 1, "{doc:#}");
    assert!(
        kept[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("uninstall again")),
        "{doc:#}"
    );
    assert!(ledger.exists(), "the ledger went while its rules stayed");
    assert_eq!(
        std::fs::read_to_string(&settings).expect("settings"),
        format!("[{good}]"),
        "the operator's file is theirs to repair"
    );

    std::fs::write(&settings, &good).expect("repaired");
    let (doc, code) = run_json(&world, &["uninstall", "--agent", "claude-code"]);
    assert_eq!(code, Some(0), "{doc:#}");
    let after = std::fs::read_to_string(&settings).expect("settings");
    assert!(
        !after.contains("Edit(//"),
        "the rules were taken out: {after}"
    );
    assert!(!ledger.exists(), "the ledger went with them");
}
