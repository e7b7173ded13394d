use std::fs;

use serde_json::json;

use super::*;
use crate::template::render_init_config;

struct Scene {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    path: std::path::PathBuf,
    env: Environment,
}

fn scene(header: &str) -> Scene {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = dir.path().join("ws");
    let state = dir.path().join("state");
    fs::create_dir_all(&ws).expect("ws");
    fs::create_dir_all(&state).expect("state");
    let path = dir.path().join("config.yaml");
    fs::write(
        &path,
        format!("{header}{}", render_init_config(&ws, &state)),
    )
    .expect("seed");
    // The file is named by the override, so a start in `ws` reads exactly this one.
    let env = Environment {
        home: dir.path().to_path_buf(),
        config_override: Some(path.clone().into_os_string()),
        ..Environment::from_process()
    };
    Scene {
        _dir: dir,
        ws,
        path,
        env,
    }
}

const AGENT: Stamp<'static> = Stamp {
    actor: Actor::Agent,
    via: "mcp:project_config_set",
};

impl Scene {
    /// The agent's `edit` of this scene's file.
    fn edit<E>(
        &self,
        edit: impl FnOnce(&mut Value, &Config) -> Result<Vec<String>, E>,
    ) -> Result<Written, WriteError<E>> {
        edit_config(&self.ws, &self.path, &self.env, AGENT, edit)
    }

    fn bytes(&self) -> Vec<u8> {
        fs::read(&self.path).expect("read")
    }

    fn text(&self) -> String {
        fs::read_to_string(&self.path).expect("read")
    }

    /// The file as the document a generated write replaces it with.
    fn document(&self) -> Value {
        parse_yaml(&String::from_utf8_lossy(&self.bytes()))
            .expect("parses")
            .to_json()
    }
}

/// The edit naming the target `name`.
fn rename(name: &str) -> impl FnOnce(&mut Value, &Config) -> Result<Vec<String>, ()> {
    move |doc, _| {
        doc["target"]["name"] = json!(name);
        Ok(vec!["target.name".into()])
    }
}

/// The `config_invalid` refusal `err` must be.
fn invalid<E: std::fmt::Debug>(err: WriteError<E>) -> ConfigError {
    match err {
        WriteError::Invalid(e) => {
            assert_eq!(e.error_type(), "config_invalid");
            e
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_write_keeps_the_header_adds_one_change_line_and_counts_modifications() {
    let s = scene("# Bench of team A\n# do not share\n\n");
    for name in ["first", "second"] {
        let written = s.edit(rename(name)).expect("written");
        assert!(written.written);
        assert_eq!(written.config.target.name, name);
    }
    let text = s.text();
    assert!(text.starts_with(
        "# Bench of team A\n# do not share\n# Changed by an agent via mcp:project_config_set at "
    ));
    assert_eq!(text.matches("# Changed by").count(), 1);
    let config = crate::load::load_config_file(&s.path).expect("loads");
    let provenance = config.provenance.expect("provenance");
    assert_eq!(provenance.modification_count, Some(2));
    assert_eq!(provenance.last_modified_by, Some(Actor::Agent));
    assert_eq!(
        provenance.last_modified_keys,
        Some(vec!["target.name".to_owned()])
    );
    assert!(
        provenance.created_by.is_none(),
        "created_* is never written by a field edit"
    );
}

#[test]
fn an_edit_that_breaks_a_rule_writes_nothing() {
    let s = scene("");
    let before = s.bytes();
    let err = s
        .edit(|doc, _| {
            doc["version"] = json!(9);
            Ok::<_, ()>(vec!["version".into()])
        })
        .expect_err("refused");
    invalid(err);
    assert_eq!(s.bytes(), before);
}

#[test]
fn a_refused_or_empty_edit_leaves_the_bytes_alone() {
    let s = scene("");
    let before = s.bytes();
    let refused = s.edit(|doc, _| {
        doc["target"]["name"] = json!("x");
        Err::<Vec<String>, _>("no")
    });
    assert!(matches!(refused, Err(WriteError::Refused("no"))));
    let noop = s.edit(|_, _| Ok::<_, ()>(Vec::new())).expect("ok");
    assert!(!noop.written);
    assert_eq!(s.bytes(), before);
}

#[test]
fn the_edit_sees_the_configuration_on_disk() {
    let s = scene("");
    s.edit(|_, current| {
        assert!(current.permissions.allow_config_permissions_write);
        assert!(current.debuggers.contains_key("dut"));
        Ok::<_, ()>(Vec::new())
    })
    .expect("ok");
}

#[test]
fn a_hand_edit_during_the_write_wins_and_the_write_is_refused() {
    let s = scene("");
    let err = s
        .edit(|doc, current| {
            let edited = fs::read_to_string(&s.path)
                .expect("read")
                .replace("example-target", "edited-by-hand");
            fs::write(&s.path, edited).expect("the editor saves");
            rename("from-the-agent")(doc, current)
        })
        .expect_err("refused");
    assert!(matches!(err, WriteError::ChangedUnderneath), "{err:?}");
    assert!(s.text().contains("edited-by-hand"));
}

#[test]
fn a_write_waits_while_another_writer_holds_the_lock() {
    let s = scene("");
    let held = file::WriteLock::take(&s.path).expect("lock");
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let written = s.edit(rename("after-the-lock"));
            done_tx.send(written.is_ok()).expect("send");
        });
        let early = done_rx.recv_timeout(std::time::Duration::from_millis(300));
        assert!(early.is_err(), "the write went ahead under a held lock");
        drop(held);
        let finished = done_rx.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(finished, Ok(true), "the write follows the release");
    });
    assert!(s.text().contains("after-the-lock"));
}

#[test]
fn a_generated_document_that_would_not_load_writes_nothing() {
    let s = scene("");
    let before = s.bytes();
    let mut document = s.document();
    document["version"] = json!(9);
    let err = write_generated(&s.ws, &s.path, &s.env, AGENT, &document).expect_err("refused");
    invalid(err);
    assert_eq!(s.bytes(), before);
}

/// The document checks alone pass a program inside the workspace; the start that follows would
/// refuse it. The writer runs the start's own check, so the file keeps every byte and still loads.
#[test]
fn an_edit_a_start_would_refuse_is_refused_and_the_file_still_loads() {
    let s = scene("");
    let tool = s.ws.join("tools/openocd");
    fs::create_dir_all(tool.parent().expect("dir")).expect("tools");
    fs::write(&tool, "#!/bin/sh\n").expect("tool");
    crate::load::parse_config(&s.bytes()).expect("the seed parses");
    let before = s.bytes();
    let err = s
        .edit(|doc, _| {
            doc["debuggers"]["dut"]["executable"] = json!(tool.display().to_string());
            Ok::<_, ()>(vec!["debuggers.dut.executable".into()])
        })
        .expect_err("refused");
    let e = invalid(err);
    assert!(
        e.summary().contains("outside the workspace"),
        "{}",
        e.summary()
    );
    assert_eq!(s.bytes(), before, "not a byte moved");
    crate::load::load_authoritative(&s.ws, &s.env).expect("the next start still loads");
}

#[test]
fn a_generated_document_a_start_would_refuse_writes_nothing() {
    let s = scene("");
    let before = s.bytes();
    let mut document = s.document();
    // A process-bridge bus without its program parses, and a start refuses it when it pins.
    document["can_buses"] = json!({"bridge": {"adapter": "process", "channel": "vcan0"}});
    let err = write_generated(&s.ws, &s.path, &s.env, AGENT, &document).expect_err("refused");
    invalid(err);
    assert_eq!(s.bytes(), before);
    crate::load::load_authoritative(&s.ws, &s.env).expect("the next start still loads");
}

#[test]
fn a_write_to_a_file_no_start_reads_is_refused() {
    let s = scene("");
    let elsewhere = s.path.with_file_name("other.yaml");
    fs::copy(&s.path, &elsewhere).expect("copy");
    let before = fs::read(&elsewhere).expect("read");
    let err = edit_config(&s.ws, &elsewhere, &s.env, AGENT, rename("x")).expect_err("refused");
    invalid(err);
    assert_eq!(fs::read(&elsewhere).expect("read"), before);
}
