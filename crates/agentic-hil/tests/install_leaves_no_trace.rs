//! `agent-install` then `uninstall`, for every host, leaves the HOME byte-identical to before: with
//! no host file at all, and with a host file holding the operator's other entries, comments and
//! formatting (4-space indent, inline arrays, no final newline). In between, the host file keeps
//! that formatting; after the operator edits it, uninstall still takes out only what it added.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::World;

/// Every entry below `root`: kind, mode and (for files) bytes, by relative path.
fn tree(root: &Path) -> BTreeMap<PathBuf, (String, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable dir") {
            let path = entry.expect("entry").path();
            let meta = path.symlink_metadata().expect("metadata");
            let rel = path.strip_prefix(root).expect("below root").to_path_buf();
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                out.insert(rel, ("dir".to_owned(), mode, Vec::new()));
                stack.push(path);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("link");
                out.insert(
                    rel,
                    (
                        "link".to_owned(),
                        mode,
                        target.as_os_str().as_encoded_bytes().to_vec(),
                    ),
                );
            } else {
                out.insert(
                    rel,
                    ("file".to_owned(), mode, std::fs::read(&path).expect("file")),
                );
            }
        }
    }
    out
}

fn assert_same_tree(before: &BTreeMap<PathBuf, (String, u32, Vec<u8>)>, home: &Path, host: &str) {
    let after = tree(home);
    for (path, entry) in &after {
        match before.get(path) {
            None => panic!("{host}: uninstall left {} behind", path.display()),
            Some(old) if old != entry => panic!(
                "{host}: {} differs after uninstall:\n--- before\n{}\n--- after\n{}",
                path.display(),
                String::from_utf8_lossy(&old.2),
                String::from_utf8_lossy(&entry.2)
            ),
            Some(_) => {}
        }
    }
    for path in before.keys() {
        assert!(
            after.contains_key(path),
            "{host}: uninstall removed {}",
            path.display()
        );
    }
}

fn run_json(world: &World, args: &[&str]) -> Value {
    let tmp = world.home.parent().expect("world root").join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp dir");
    let out = world
        .command()
        .env("TMPDIR", &tmp)
        .args(args)
        .arg("--json")
        .output()
        .expect("the binary runs");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "{args:?} prints one JSON document ({err}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(out.status.code(), Some(0), "{args:?}: {doc:#}");
    doc
}

fn registration_file(agent: &str) -> &'static str {
    match agent {
        "claude-code" => ".claude.json",
        "codex" => ".codex/config.toml",
        "cursor" => ".cursor/mcp.json",
        "vscode" => ".config/Code/User/mcp.json",
        "gemini" => ".gemini/settings.json",
        "opencode" => ".config/opencode/opencode.json",
        other => panic!("no host {other}"),
    }
}

/// The operator's own host file: other entries, comments where the host reads them, 4-space
/// indent, inline arrays, no final newline.
fn operators_file(agent: &str) -> &'static str {
    match agent {
        "claude-code" => {
            "{\n    \"numStartups\": 7,\n    \"projects\": [\"/src/a\", \"/src/b\"],\n    \"mcpServers\": {\n        \"other\": {\"type\": \"stdio\", \"command\": \"/bin/true\", \"args\": [\"-x\"]}\n    }\n}"
        }
        "codex" => {
            "# my codex settings\nmodel = \"o3\"\napproval_policy = \"on-request\"   # ask first\n\n[mcp_servers.other]\ncommand = \"/bin/true\"\nargs = [ \"a\", \"b\" ]\n\n[profiles.fast]\nmodel = \"o4-mini\""
        }
        "cursor" => {
            "{\n    // my servers\n    \"mcpServers\": {\n        \"other\": {\"command\": \"/bin/true\", \"args\": [\"a\", \"b\"]}\n    }\n}"
        }
        "vscode" => {
            "{\n    // servers for every workspace\n    \"servers\": {\n        \"other\": {\"type\": \"stdio\", \"command\": \"/bin/true\", \"args\": []}, // mine\n    },\n    \"inputs\": []\n}"
        }
        "gemini" => {
            "{\n    /* look */\n    \"theme\": \"GitHub\",\n    \"selectedAuthType\": \"oauth-personal\",\n    \"excludeTools\": [\"run_shell_command\"]\n}"
        }
        "opencode" => {
            "{\n    \"$schema\": \"https://opencode.ai/config.json\",\n    // which model\n    \"model\": \"anthropic/claude-sonnet-4\",\n    \"mcp\": {\n        \"other\": {\"type\": \"local\", \"command\": [\"/bin/true\"], \"enabled\": true}\n    }\n}"
        }
        other => panic!("no host {other}"),
    }
}

/// The operator's HOME beside the host file: other dotfiles, another skill, their AGENTS.md.
fn seed_home(home: &Path, agent: &str) {
    let files = [
        (".bashrc", "export EDITOR=vi\n"),
        (".claude/skills/mine/SKILL.md", "my skill"),
        (".codex/AGENTS.md", "# my rules\n\nBe brief."),
        (".config/other/settings.ini", "[a]\nb=1"),
        (registration_file(agent), operators_file(agent)),
    ];
    for (path, text) in files {
        let path = home.join(path);
        std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
        std::fs::write(&path, text).expect("seed");
    }
    std::fs::set_permissions(
        home.join(registration_file(agent)),
        std::fs::Permissions::from_mode(0o640),
    )
    .expect("mode");
}

/// The host file after install still holds the operator's text around our entry, and our entry
/// is indented like the operator's.
fn assert_kept_formatting(agent: &str, text: &str) {
    let original = operators_file(agent);
    if agent == "codex" {
        for line in original.lines() {
            assert!(text.contains(line), "codex kept {line:?}:\n{text}");
        }
        assert!(
            text.contains("[mcp_servers.agentic-hil]\ncommand = "),
            "{text}"
        );
        return;
    }
    let parsed =
        jsonc_parser::cst::CstRootNode::parse(text, &jsonc_parser::ParseOptions::default())
            .ok()
            .and_then(|root| root.value())
            .and_then(|value| value.to_serde_value())
            .expect("still JSONC");
    let keys = match agent {
        "vscode" => "servers",
        "opencode" => "mcp",
        _ => "mcpServers",
    };
    assert!(parsed[keys]["agentic-hil"].is_object(), "{agent}: {text}");
    assert!(
        text.contains("\n        \"agentic-hil\": {\n            \""),
        "{agent}: our entry is indented four spaces a level:\n{text}"
    );
    for comment in [
        "// my servers",
        "// servers for every workspace",
        "// mine",
        "/* look */",
        "// which model",
    ] {
        if original.contains(comment) {
            assert!(text.contains(comment), "{agent} kept {comment}:\n{text}");
        }
    }
    for inline in [
        "[\"/src/a\", \"/src/b\"]",
        "[\"a\", \"b\"]",
        "[\"run_shell_command\"]",
    ] {
        if original.contains(inline) {
            assert!(
                text.contains(inline),
                "{agent} kept {inline} inline:\n{text}"
            );
        }
    }
    assert!(!text.ends_with('\n'), "{agent}: no final newline was added");
}

fn install_then_uninstall(agent: &str, seeded: bool) {
    let world = World::new();
    if seeded {
        seed_home(&world.home, agent);
    }
    let before = tree(&world.home);
    let doc = run_json(&world, &["agent-install", "--agent", agent]);
    assert_eq!(
        doc["steps"]["mcp_config"]["changed"],
        json!(true),
        "{doc:#}"
    );
    let file = world.home.join(registration_file(agent));
    let written = std::fs::read_to_string(&file).expect("registered");
    assert!(written.contains("mcp-stdio"), "{agent}: {written}");
    if seeded {
        assert_kept_formatting(agent, &written);
    }
    let doc = run_json(&world, &["uninstall", "--agent", agent]);
    assert!(
        doc["agents"][0]["removed"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{doc:#}"
    );
    assert_same_tree(&before, &world.home, agent);
}

macro_rules! round_trips {
    ($($fresh:ident, $seeded:ident, $agent:literal;)*) => {$(
        #[test]
        fn $fresh() {
            install_then_uninstall($agent, false);
        }

        #[test]
        fn $seeded() {
            install_then_uninstall($agent, true);
        }
    )*};
}

round_trips! {
    claude_code_in_an_empty_home_leaves_nothing_behind, claude_code_over_the_operators_files_gives_them_back_byte_for_byte, "claude-code";
    codex_in_an_empty_home_leaves_nothing_behind, codex_over_the_operators_files_gives_them_back_byte_for_byte, "codex";
    cursor_in_an_empty_home_leaves_nothing_behind, cursor_over_the_operators_files_gives_them_back_byte_for_byte, "cursor";
    vscode_in_an_empty_home_leaves_nothing_behind, vscode_over_the_operators_files_gives_them_back_byte_for_byte, "vscode";
    gemini_in_an_empty_home_leaves_nothing_behind, gemini_over_the_operators_files_gives_them_back_byte_for_byte, "gemini";
    opencode_in_an_empty_home_leaves_nothing_behind, opencode_over_the_operators_files_gives_them_back_byte_for_byte, "opencode";
}

#[test]
fn every_host_at_once_then_uninstall_leaves_an_empty_home_empty() {
    let world = World::new();
    for agent in [
        "claude-code",
        "codex",
        "cursor",
        "vscode",
        "gemini",
        "opencode",
    ] {
        run_json(&world, &["agent-install", "--agent", agent]);
    }
    run_json(&world, &["uninstall"]);
    assert_same_tree(&BTreeMap::new(), &world.home, "all");
}

#[test]
fn an_operators_edit_after_install_is_kept_and_only_our_entry_and_keys_go() {
    let world = World::new();
    seed_home(&world.home, "gemini");
    run_json(&world, &["agent-install", "--agent", "gemini"]);
    let file = world.home.join(".gemini/settings.json");
    let installed = std::fs::read_to_string(&file).expect("file");
    // The operator changes their theme while our entry is there.
    std::fs::write(&file, installed.replace("\"GitHub\"", "\"Dracula\"")).expect("edit");

    run_json(&world, &["uninstall", "--agent", "gemini"]);
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        operators_file("gemini").replace("\"GitHub\"", "\"Dracula\""),
        "the mcpServers key install created went with our entry"
    );
}

#[test]
fn a_file_install_created_stays_when_the_host_wrote_its_own_keys_into_it() {
    let world = World::new();
    run_json(&world, &["agent-install", "--agent", "claude-code"]);
    let file = world.home.join(".claude.json");
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("file")).expect("json");
    // Claude Code rewrites its own file while it runs.
    doc["numStartups"] = json!(1);
    std::fs::write(&file, serde_json::to_string(&doc).expect("json")).expect("rewrite");

    run_json(&world, &["uninstall", "--agent", "claude-code"]);
    assert_eq!(
        std::fs::read_to_string(&file).expect("kept"),
        "{\"numStartups\":1}"
    );
    assert!(
        !world.home.join(".claude/skills").exists(),
        "the skills folder install made went"
    );
}

#[test]
fn setup_then_uninstall_gives_back_the_operators_claude_settings_byte_for_byte() {
    let world = World::new();
    let settings = world.home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().expect("dir")).expect("dir");
    let original = "{\n    // mine\n    \"model\": \"opus\",\n    \"permissions\": {\"allow\": [\"Bash(ls:*)\"]}\n}";
    std::fs::write(&settings, original).expect("seed");
    run_json(&world, &["setup", "--agent", "claude-code"]);
    let text = std::fs::read_to_string(&settings).expect("settings");
    assert!(text.contains("\"deny\""), "{text}");
    assert!(
        text.starts_with("{\n    // mine\n    \"model\": \"opus\",\n"),
        "{text}"
    );

    run_json(&world, &["uninstall", "--agent", "claude-code"]);
    assert_eq!(
        std::fs::read_to_string(&settings).expect("settings"),
        original
    );
    assert!(!world.home.join(".claude.json").exists());
}

#[test]
fn a_compact_one_line_host_file_comes_back_byte_for_byte() {
    let world = World::new();
    let file = world.home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().expect("dir")).expect("dir");
    let original = r#"{"mcpServers":{"other":{"command":"/bin/true","args":["a"]}}}"#;
    std::fs::write(&file, original).expect("seed");
    let before = tree(&world.home);
    run_json(&world, &["agent-install", "--agent", "cursor"]);
    assert_ne!(std::fs::read_to_string(&file).expect("file"), original);
    run_json(&world, &["uninstall", "--agent", "cursor"]);
    assert_same_tree(&before, &world.home, "cursor");
}

#[test]
fn a_record_naming_a_file_install_never_writes_changes_nothing_there() {
    use sha2::Digest;
    let world = World::new();
    let bashrc = world.home.join(".bashrc");
    std::fs::write(&bashrc, "export EDITOR=vi\n").expect("seed");
    let outside = world.home.parent().expect("root").join("elsewhere");
    std::fs::create_dir_all(&outside).expect("dir");
    let digest =
        sha2::Sha256::digest(b"export EDITOR=vi\n")
            .iter()
            .fold(String::new(), |mut hex, b| {
                use std::fmt::Write;
                let _ = write!(hex, "{b:02x}");
                hex
            });
    let record = json!({
        "edits": [{"agent": "cursor", "path": bashrc, "created": true, "created_keys": [],
                   "sha256": digest, "inserted": [[0, 17]]}],
        "dirs": [outside],
    });
    let file = world.home.join(".config/agentic-hil/installed.json");
    std::fs::create_dir_all(file.parent().expect("dir")).expect("dir");
    std::fs::write(&file, record.to_string()).expect("record");

    run_json(&world, &["uninstall", "--agent", "cursor"]);
    assert_eq!(
        std::fs::read_to_string(&bashrc).expect("kept"),
        "export EDITOR=vi\n"
    );
    assert!(outside.exists(), "a folder outside HOME is never removed");
}

#[test]
fn installing_again_for_a_moved_binary_still_uninstalls_back_to_the_operators_bytes() {
    let world = World::new();
    // A one-line file: only the record, not the syntax tree, can give it back byte for byte.
    let file = world.home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().expect("dir")).expect("dir");
    std::fs::write(&file, r#"{"mcpServers":{"other":{"command":"/bin/true"}}}"#).expect("seed");
    let moved = world.home.join("opt/agentic-hil");
    std::fs::create_dir_all(moved.parent().expect("dir")).expect("dir");
    std::fs::copy(World::binary(), &moved).expect("copy");
    let before = tree(&world.home);
    let moved_arg = moved.to_string_lossy().into_owned();
    run_json(
        &world,
        &[
            "agent-install",
            "--agent",
            "cursor",
            "--launcher",
            &moved_arg,
        ],
    );
    // The binary moved back to its usual place: the entry is replaced, not added twice.
    let doc = run_json(&world, &["agent-install", "--agent", "cursor"]);
    assert_eq!(
        doc["steps"]["mcp_config"]["changed"],
        json!(true),
        "{doc:#}"
    );
    let text =
        std::fs::read_to_string(world.home.join(registration_file("cursor"))).expect("registered");
    assert_eq!(text.matches("\"agentic-hil\"").count(), 1, "{text}");
    assert!(!text.contains(&moved_arg), "{text}");

    run_json(&world, &["uninstall", "--agent", "cursor"]);
    assert_same_tree(&before, &world.home, "cursor");
}
