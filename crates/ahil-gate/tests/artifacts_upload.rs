//! `artifact_upload` from the outside: through `Bench::call`, in a private HOME and workspace.

mod artifacts_support;

use std::fs;
use std::path::PathBuf;

use ahil_config::{
    Environment, canonical_config_path, default_state_root, load_authoritative, render_init_config,
};
use ahil_gate::Bench;
use ahil_gate::artifacts::sha256_hex;
use artifacts_support::{elf32, symlink};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

struct Gate {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
    bench: Bench,
}

/// The generated starter (`allowed_roots: ["."]`, `allow_upload: true`) with `edits` applied.
fn gate(edits: &[(&str, &str)]) -> Gate {
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    let workspace = root.path().join("ws");
    let outside = root.path().join("outside");
    for dir in [&home, &workspace, &outside] {
        fs::create_dir_all(dir).expect("dirs");
    }
    let env = Environment {
        home,
        xdg_config_home: None,
        xdg_state_home: None,
        config_override: None,
        path: Some(root.path().join("no-tools").into_os_string()),
    };
    let mut text = render_init_config(&workspace, &default_state_root(&env));
    for (from, to) in edits {
        assert!(text.contains(from), "the starter has no `{from}`");
        text = text.replacen(from, to, 1);
    }
    let path = canonical_config_path(&workspace, &env);
    fs::create_dir_all(path.parent().expect("parent")).expect("config dir");
    fs::write(&path, text).expect("config");
    let loaded = load_authoritative(&workspace, &env).expect("the config loads");
    Gate {
        _root: root,
        workspace,
        outside,
        bench: Bench::provisioned(loaded, env),
    }
}

fn run(gate: &Gate, args: Value) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let outcome = runtime.block_on(gate.bench.call("artifact_upload", args));
    let value = outcome.to_value();
    let text = value.to_string();
    assert!(
        !text.contains(gate.workspace.to_string_lossy().as_ref()),
        "an absolute path leaked: {text}"
    );
    value
}

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

fn stored(gate: &Gate, id: &str) -> PathBuf {
    gate.workspace.join(".agentic-hil/artifacts").join(id)
}

#[test]
fn uploaded_bytes_are_stored_under_their_digest_and_the_same_bytes_give_the_same_id() {
    let gate = gate(&[]);
    let image = elf32(40, 512);
    let first = run(
        &gate,
        json!({"filename": "app.elf", "data_base64": b64(&image)}),
    );
    assert_eq!(first["ok"], true, "{first}");
    let id = format!("{}.elf", sha256_hex(&image));
    assert_eq!(first["artifact_id"], id.as_str());
    assert_eq!(first["artifact"]["source"], "upload");
    assert_eq!(
        first["artifact"]["path"],
        format!(".agentic-hil/artifacts/{id}").as_str()
    );
    assert_eq!(first["artifact"]["original_filename"], "app.elf");
    assert_eq!(first["validation"]["elf_header"], true);
    assert_eq!(fs::read(stored(&gate, &id)).expect("stored"), image);
    let again = run(
        &gate,
        json!({"filename": "APP.ELF", "data_base64": b64(&image)}),
    );
    assert_eq!(again["artifact_id"], id.as_str(), "{again}");
}

#[test]
fn a_second_upload_of_the_same_bytes_keeps_the_stored_copy_and_a_changed_copy_is_replaced() {
    use std::os::unix::fs::MetadataExt;
    let gate = gate(&[]);
    let image = elf32(40, 4096);
    let upload = || {
        run(
            &gate,
            json!({"filename": "app.elf", "data_base64": b64(&image)}),
        )
    };
    let first = upload();
    assert_eq!(first["ok"], true, "{first}");
    let id = first["artifact_id"].as_str().expect("id").to_owned();
    let inode = || fs::metadata(stored(&gate, &id)).expect("stored").ino();
    let kept = inode();
    assert_eq!(upload()["ok"], true);
    assert_eq!(inode(), kept, "the same bytes are not written again");
    // The same size, one byte changed: no longer the bytes of this id, so they are written again.
    let mut altered = image.clone();
    altered[100] ^= 0xff;
    fs::write(stored(&gate, &id), &altered).expect("alter");
    let again = upload();
    assert_eq!(again["ok"], true, "{again}");
    assert_eq!(fs::read(stored(&gate, &id)).expect("stored"), image);
    assert_ne!(inode(), kept, "a changed copy is replaced");
    // A second name for the stored file: replaced, so the upload never writes through a link.
    let other = gate.outside.join("second-name");
    fs::hard_link(stored(&gate, &id), &other).expect("link");
    assert_eq!(upload()["ok"], true);
    assert_eq!(fs::metadata(stored(&gate, &id)).expect("stored").nlink(), 1);
}

#[test]
fn an_image_path_is_validated_staged_and_stored_with_its_source() {
    let gate = gate(&[]);
    let image = elf32(243, 400);
    fs::create_dir_all(gate.workspace.join("build")).expect("build");
    fs::write(gate.workspace.join("build/fw.elf"), &image).expect("image");
    let result = run(&gate, json!({"image_path": "build/fw.elf"}));
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["artifact"]["source_path"], "build/fw.elf");
    assert_eq!(result["artifact"]["original_filename"], "fw.elf");
    let id = result["artifact_id"].as_str().expect("id");
    assert_eq!(fs::read(stored(&gate, id)).expect("stored"), image);
}

#[test]
fn uploads_are_refused_while_allow_upload_is_false() {
    let gate = gate(&[("allow_upload: true", "allow_upload: false")]);
    let result = run(
        &gate,
        json!({"filename": "app.bin", "data_base64": b64(b"abc")}),
    );
    assert_eq!(result["error_type"], "permission_denied", "{result}");
    assert!(!gate.workspace.join(".agentic-hil/artifacts").exists());
}

#[test]
fn a_filename_with_a_path_is_an_invalid_argument() {
    let gate = gate(&[]);
    for name in ["a/b.elf", "..", "x\\y.bin", "nul\0.bin", "  ", "tab\t.bin"] {
        let result = run(&gate, json!({"filename": name, "data_base64": b64(b"abc")}));
        assert_eq!(
            result["error_type"], "invalid_argument",
            "{name:?}: {result}"
        );
    }
}

#[test]
fn unpadded_or_foreign_base64_is_an_invalid_argument() {
    let gate = gate(&[]);
    for data in ["AAA", "AA=A", "A-B_", "!!!!", "===="] {
        let result = run(&gate, json!({"filename": "x.bin", "data_base64": data}));
        assert_eq!(
            result["error_type"], "invalid_argument",
            "{data:?}: {result}"
        );
    }
    let spaced = run(
        &gate,
        json!({"filename": "x.bin", "data_base64": "AA AA\nAA=="}),
    );
    assert_eq!(spaced["ok"], true, "whitespace is ignored: {spaced}");
}

#[test]
fn an_upload_over_the_limit_is_too_large() {
    let gate = gate(&[("max_upload_size_mb: 64", "max_upload_size_mb: 1")]);
    let data = b64(&vec![7_u8; 1024 * 1024 + 1]);
    let result = run(&gate, json!({"filename": "big.bin", "data_base64": data}));
    assert_eq!(result["error_type"], "artifact_too_large", "{result}");
    assert_eq!(result["max_bytes"], 1024 * 1024);
}

#[test]
fn a_disallowed_extension_is_refused_with_the_id_it_would_have_had() {
    let gate = gate(&[]);
    let result = run(
        &gate,
        json!({"filename": "x.txt", "data_base64": b64(b"abc")}),
    );
    assert_eq!(
        result["error_type"], "artifact_validation_failed",
        "{result}"
    );
    assert_eq!(
        result["artifact_id"],
        format!("{}.txt", sha256_hex(b"abc")).as_str()
    );
}

#[test]
fn an_upload_that_fails_its_format_check_is_not_kept() {
    let gate = gate(&[]);
    let result = run(
        &gate,
        json!({"filename": "x.elf", "data_base64": b64(b"not an elf")}),
    );
    assert_eq!(
        result["error_type"], "artifact_validation_failed",
        "{result}"
    );
    let id = format!("{}.elf", sha256_hex(b"not an elf"));
    assert!(!stored(&gate, &id).exists());
}

#[test]
fn an_upload_directory_planted_as_a_link_is_an_unsafe_configured_path() {
    let gate = gate(&[]);
    fs::create_dir_all(gate.workspace.join(".agentic-hil")).expect("state");
    symlink(
        &gate.outside,
        &gate.workspace.join(".agentic-hil/artifacts"),
    );
    let result = run(
        &gate,
        json!({"filename": "x.bin", "data_base64": b64(b"abc")}),
    );
    assert_eq!(result["error_type"], "unsafe_configured_path", "{result}");
    assert_eq!(fs::read_dir(&gate.outside).expect("outside").count(), 0);
}

#[test]
fn a_link_planted_at_the_destination_name_is_an_unsafe_configured_path() {
    let gate = gate(&[]);
    let dir = gate.workspace.join(".agentic-hil/artifacts");
    fs::create_dir_all(&dir).expect("uploads");
    let id = format!("{}.bin", sha256_hex(b"abc"));
    let target = gate.outside.join("victim");
    fs::write(&target, b"untouched").expect("victim");
    symlink(&target, &dir.join(&id));
    let result = run(
        &gate,
        json!({"filename": "x.bin", "data_base64": b64(b"abc")}),
    );
    assert_eq!(result["error_type"], "unsafe_configured_path", "{result}");
    assert_eq!(fs::read(&target).expect("victim"), b"untouched");
}

#[test]
fn an_image_path_symlink_is_refused_through_the_gate() {
    let gate = gate(&[]);
    fs::write(gate.outside.join("secret.elf"), elf32(40, 256)).expect("secret");
    symlink(
        &gate.outside.join("secret.elf"),
        &gate.workspace.join("fw.elf"),
    );
    let result = run(&gate, json!({"image_path": "fw.elf"}));
    assert_eq!(
        result["error_type"], "artifact_validation_failed",
        "{result}"
    );
}

#[test]
fn giving_neither_form_fails_schema_validation() {
    let gate = gate(&[]);
    let result = run(&gate, json!({"filename": "x.bin"}));
    assert_eq!(result["error_type"], "invalid_argument", "{result}");
}

#[test]
fn a_copy_this_process_made_durable_is_kept_without_a_sync_until_something_else_touches_it() {
    use ahil_core::testkit::syncs_during;
    use ahil_gate::artifacts::store;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let world = artifacts_support::World::new();
    let policy = world.policy();
    // Several of the pieces the comparison reads, so a difference past the first one is seen.
    let image = elf32(40, 300 * 1024);
    let id = format!("{}.elf", sha256_hex(&image));
    let path = policy.upload_dir().join(&id);
    let store = || store::store(&policy, &id, &image).expect("stored");
    let ((), written) = syncs_during(store);
    assert_eq!(written, 2, "a new copy: its data and its directory");
    let inode = fs::metadata(&path).expect("stored").ino();
    let ((), again) = syncs_during(store);
    assert_eq!(again, 0, "the copy this process synced, untouched since");
    assert_eq!(fs::metadata(&path).expect("stored").ino(), inode);
    // Its mode set again (only its ctime moves): no longer known durable, so kept and synced.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
    let ((), touched) = syncs_during(store);
    assert_eq!(touched, 2, "a copy touched since is synced as it is");
    assert_eq!(fs::metadata(&path).expect("stored").ino(), inode);
    let ((), settled) = syncs_during(store);
    assert_eq!(settled, 0, "and known durable after that sync");
    // The same bytes written again by someone else, in place: synced, not rewritten.
    fs::write(&path, &image).expect("rewrite in place");
    let ((), rewritten) = syncs_during(store);
    assert_eq!(rewritten, 2);
    assert_eq!(fs::metadata(&path).expect("stored").ino(), inode);
    // One byte changed in the third piece: not these bytes, so replaced by a new copy.
    let mut altered = image.clone();
    altered[280 * 1024] ^= 0xff;
    fs::write(&path, &altered).expect("alter");
    store();
    assert_eq!(fs::read(&path).expect("stored"), image);
    assert_ne!(fs::metadata(&path).expect("stored").ino(), inode);
}
