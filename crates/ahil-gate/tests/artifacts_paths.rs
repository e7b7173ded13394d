//! The hostile-path suite: every request an agent could craft to make the gate read or flash bytes
//! outside the approved roots is refused with the reference's error_type, nothing is staged, and the
//! answer names neither the outside file nor its digest.

mod artifacts_support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::mpsc;
use std::time::Duration;

use ahil_gate::artifacts::{self, ArtifactRef, sha256_hex};
use artifacts_support::{MAX_MB, World, elf, elf32, ihex, symlink};

const NOT_FOUND: &str = "artifact_not_found";
const INVALID: &str = "artifact_validation_failed";
const CHANGED: &str = "artifact_changed";

/// An inside image, different from the outside secret (which is 256 bytes).
fn good_elf() -> Vec<u8> {
    elf32(40, 300)
}

fn assert_refused(world: &World, request: ArtifactRef<'_>, error_type: &str) {
    let policy = world.policy();
    let refusal = match artifacts::resolve(&policy, &world.stager, request) {
        Ok(staged) => panic!("{request:?} was accepted as {}", staged.display_path()),
        Err(refusal) => refusal,
    };
    assert_eq!(
        refusal.error_type().as_str(),
        error_type,
        "{request:?}: {:?}",
        refusal.error
    );
    let text = refusal.to_outcome("flash_firmware").to_value().to_string();
    let secret = sha256_hex(&elf32(40, 256));
    assert!(!text.contains(&secret), "the outside file was read: {text}");
    assert!(
        !text.contains(world.workspace.to_string_lossy().as_ref()),
        "an absolute path leaked: {text}"
    );
    assert!(
        world.staged_files().is_empty(),
        "a refusal left a staged copy"
    );
}

fn path_refused(setup: impl FnOnce(&World), path: &str, error_type: &str) {
    let world = World::new();
    setup(&world);
    assert_refused(&world, ArtifactRef::Path(path), error_type);
}

#[test]
fn a_parent_segment_out_of_the_workspace_is_refused() {
    path_refused(|_| {}, "../outside/secret.elf", INVALID);
}

#[test]
fn a_parent_segment_inside_a_root_is_refused_even_when_it_stays_inside() {
    path_refused(
        |w| {
            w.put("build/app.elf", &good_elf());
        },
        "build/a/../app.elf",
        INVALID,
    );
}

#[test]
fn a_backslash_parent_segment_is_refused() {
    path_refused(|_| {}, "build\\..\\..\\outside\\secret.elf", INVALID);
}

#[test]
fn an_absolute_path_outside_the_workspace_is_refused() {
    let world = World::new();
    let path = world.outside.join("secret.elf");
    assert_refused(&world, ArtifactRef::Path(&path.to_string_lossy()), INVALID);
}

#[test]
fn dev_zero_is_refused_without_reading_it() {
    path_refused(|_| {}, "/dev/zero", INVALID);
}

#[test]
fn an_absolute_path_inside_the_workspace_but_outside_the_roots_is_refused() {
    let world = World::new();
    let path = world.put("src/app.elf", &good_elf());
    assert_refused(&world, ArtifactRef::Path(&path.to_string_lossy()), INVALID);
}

#[test]
fn a_root_that_is_a_symbolic_link_out_of_the_workspace_is_refused() {
    path_refused(
        |w| {
            fs::remove_dir_all(w.ws("build")).expect("remove build");
            symlink(&w.outside, &w.ws("build"));
        },
        "build/secret.elf",
        INVALID,
    );
}

#[test]
fn a_symbolic_link_at_the_first_directory_below_the_root_is_refused() {
    path_refused(
        |w| {
            fs::remove_dir_all(w.ws("build/a")).expect("remove a");
            symlink(&w.outside, &w.ws("build/a"));
        },
        "build/a/secret.elf",
        INVALID,
    );
}

#[test]
fn a_symbolic_link_at_the_second_directory_below_the_root_is_refused() {
    path_refused(
        |w| {
            fs::remove_dir_all(w.ws("build/a/b")).expect("remove b");
            symlink(&w.outside, &w.ws("build/a/b"));
        },
        "build/a/b/secret.elf",
        INVALID,
    );
}

#[test]
fn a_symbolic_link_as_the_file_itself_is_refused() {
    path_refused(
        |w| symlink(&w.outside.join("secret.elf"), &w.ws("build/a/b/app.elf")),
        "build/a/b/app.elf",
        INVALID,
    );
}

#[test]
fn a_symbolic_link_to_a_file_inside_the_roots_is_refused_too() {
    path_refused(
        |w| {
            w.put("build/real.elf", &good_elf());
            symlink(&w.ws("build/real.elf"), &w.ws("build/app.elf"));
        },
        "build/app.elf",
        INVALID,
    );
}

#[test]
fn a_relative_symbolic_link_climbing_out_is_refused() {
    path_refused(
        |w| symlink("../../outside/secret.elf".as_ref(), &w.ws("build/app.elf")),
        "build/app.elf",
        INVALID,
    );
}

#[test]
fn a_symbolic_link_to_dev_zero_is_refused() {
    path_refused(
        |w| symlink("/dev/zero".as_ref(), &w.ws("build/zero.bin")),
        "build/zero.bin",
        INVALID,
    );
}

#[test]
fn a_hard_link_to_a_file_outside_is_refused() {
    let world = World::new();
    // Same filesystem (one temp dir), so the link succeeds.
    fs::hard_link(world.outside.join("secret.elf"), world.ws("build/app.elf")).expect("hard link");
    assert_refused(&world, ArtifactRef::Path("build/app.elf"), INVALID);
}

#[test]
fn a_hard_link_between_two_files_inside_is_refused() {
    path_refused(
        |w| {
            w.put("build/one.elf", &good_elf());
            fs::hard_link(w.ws("build/one.elf"), w.ws("build/two.elf")).expect("hard link");
        },
        "build/two.elf",
        INVALID,
    );
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let world = World::new();
    let status = std::process::Command::new("mkfifo")
        .arg(world.ws("build/fifo.bin"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo failed");
    let (tx, rx) = mpsc::channel();
    let policy = world.policy();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let result = artifacts::check(&policy, ArtifactRef::Path("build/fifo.bin"));
            tx.send(result.map(|_| ()).map_err(|r| r.error_type().as_str()))
                .expect("send");
        });
        let verdict = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("opening a fifo must not block");
        assert_eq!(verdict, Err(INVALID));
    });
}

#[test]
fn a_directory_with_an_image_extension_is_refused() {
    path_refused(
        |w| fs::create_dir(w.ws("build/dir.elf")).expect("dir"),
        "build/dir.elf",
        INVALID,
    );
}

/// The file-type check must be what refuses these, not a later read whose bytes fail to parse.
#[test]
fn a_directory_or_a_fifo_is_refused_as_not_a_regular_file() {
    let world = World::new();
    fs::create_dir(world.ws("build/dir.elf")).expect("dir");
    let status = std::process::Command::new("mkfifo")
        .arg(world.ws("build/fifo.bin"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo failed");
    let policy = world.policy();
    for path in ["build/dir.elf", "build/fifo.bin"] {
        let Err(refusal) = artifacts::resolve(&policy, &world.stager, ArtifactRef::Path(path))
        else {
            panic!("{path} was accepted");
        };
        let why = format!("{:?}", refusal.error);
        assert!(why.contains("regular file"), "{path}: {why}");
    }
}

#[test]
fn a_file_over_the_size_limit_is_refused_as_too_large() {
    let world = World::new();
    let size = usize::try_from(MAX_MB * 1024 * 1024).expect("fits") + 1;
    world.put("build/big.bin", &vec![0xa5; size]);
    assert_refused(
        &world,
        ArtifactRef::Path("build/big.bin"),
        "artifact_too_large",
    );
}

#[test]
fn a_missing_file_is_not_found() {
    path_refused(|_| {}, "build/missing.elf", NOT_FOUND);
}

#[test]
fn a_missing_directory_component_is_not_found() {
    path_refused(|_| {}, "build/nowhere/app.elf", NOT_FOUND);
}

#[test]
fn an_elf_with_the_wrong_magic_is_refused() {
    path_refused(
        |w| {
            w.put("build/app.elf", b"NOTELF at all, just text");
        },
        "build/app.elf",
        INVALID,
    );
}

#[test]
fn a_truncated_elf_is_refused() {
    path_refused(
        |w| {
            w.put("build/app.elf", &good_elf()[..40]);
        },
        "build/app.elf",
        INVALID,
    );
}

#[test]
fn an_elf_whose_segment_runs_past_the_end_is_refused() {
    path_refused(
        |w| {
            w.put("build/app.elf", &good_elf()[..200]);
        },
        "build/app.elf",
        INVALID,
    );
}

#[test]
fn an_elf_for_a_desktop_machine_is_refused() {
    path_refused(
        |w| {
            w.put("build/app.elf", &elf(true, false, 62, 400));
        },
        "build/app.elf",
        INVALID,
    );
}

#[test]
fn a_hex_file_with_a_checksum_error_is_refused() {
    path_refused(
        |w| {
            w.put("build/app.hex", b":0400000001020304F3\n:00000001FF\n");
        },
        "build/app.hex",
        INVALID,
    );
}

#[test]
fn a_hex_file_without_an_end_record_is_refused() {
    path_refused(
        |w| {
            w.put("build/app.hex", b":0400000001020304F2\n");
        },
        "build/app.hex",
        INVALID,
    );
}

#[test]
fn an_empty_binary_is_refused() {
    path_refused(
        |w| {
            w.put("build/app.bin", b"");
        },
        "build/app.bin",
        INVALID,
    );
}

#[test]
fn a_nul_in_the_name_is_refused_before_any_lookup() {
    path_refused(|_| {}, "build/app\0.elf", INVALID);
}

#[test]
fn a_newline_in_the_name_is_refused_even_when_such_a_file_exists() {
    path_refused(
        |w| {
            w.put("build/a\nb.elf", &good_elf());
        },
        "build/a\nb.elf",
        INVALID,
    );
}

#[test]
fn an_escape_character_in_the_name_is_refused() {
    path_refused(
        |w| {
            w.put("build/\u{1b}[2Japp.elf", &good_elf());
        },
        "build/\u{1b}[2Japp.elf",
        INVALID,
    );
}

#[test]
fn an_uppercase_extension_picks_the_format_check_of_its_lowercase_form() {
    // APP.HEX holding ELF bytes is judged as HEX (the lowercased extension) and fails.
    path_refused(
        |w| {
            w.put("build/APP.HEX", &good_elf());
        },
        "build/APP.HEX",
        INVALID,
    );
}

#[test]
fn an_extension_outside_the_allowed_list_is_refused() {
    path_refused(
        |w| {
            w.put("build/app.txt", &good_elf());
        },
        "build/app.txt",
        INVALID,
    );
}

#[test]
fn a_double_extension_is_judged_by_its_last_suffix() {
    path_refused(
        |w| {
            w.put("build/app.elf.txt", &good_elf());
        },
        "build/app.elf.txt",
        INVALID,
    );
}

#[test]
fn a_root_replaced_by_a_plain_file_is_refused() {
    // `build` replaced by a plain file: the walk meets a non-directory.
    path_refused(
        |w| {
            fs::remove_dir_all(w.ws("build")).expect("remove build");
            w.put("build", b"not a directory");
            fs::set_permissions(w.ws("build"), fs::Permissions::from_mode(0o666)).expect("chmod");
        },
        "build/app.elf",
        INVALID,
    );
}

#[test]
fn a_malformed_artifact_id_is_an_invalid_argument() {
    let world = World::new();
    assert_refused(
        &world,
        ArtifactRef::Id("../../outside/secret.elf"),
        "invalid_argument",
    );
    assert_refused(&world, ArtifactRef::Id(&"A".repeat(64)), "invalid_argument");
    assert_refused(
        &world,
        ArtifactRef::Id(&format!("{}./x", "a".repeat(64))),
        "invalid_argument",
    );
}

#[test]
fn an_artifact_id_is_refused_while_uploads_are_disabled() {
    let mut world = World::new();
    world.config.artifacts.allow_upload = false;
    assert_refused(
        &world,
        ArtifactRef::Id(&"a".repeat(64)),
        "permission_denied",
    );
}

#[test]
fn an_artifact_id_that_was_never_uploaded_is_not_found() {
    let world = World::new();
    assert_refused(
        &world,
        ArtifactRef::Id(&format!("{}.elf", "b".repeat(64))),
        NOT_FOUND,
    );
}

#[test]
fn an_upload_directory_that_is_a_symbolic_link_is_not_followed_for_an_id() {
    let world = World::new();
    let id = format!("{}.elf", sha256_hex(&elf32(40, 256)));
    fs::copy(world.outside.join("secret.elf"), world.outside.join(&id)).expect("plant");
    fs::create_dir_all(world.ws(".agentic-hil")).expect("state dir");
    symlink(&world.outside, &world.ws(".agentic-hil/artifacts"));
    assert_refused(&world, ArtifactRef::Id(&id), INVALID);
}

#[test]
fn an_upload_directory_outside_the_workspace_is_never_written() {
    let mut world = World::new();
    world.config.artifacts.upload_directory = world.outside.to_string_lossy().into_owned();
    let refusal = artifacts::store::store(&world.policy(), "x.bin", b"abc")
        .expect_err("outside the workspace");
    assert_eq!(refusal.error_type().as_str(), "unsafe_configured_path");
    assert!(!world.outside.join("x.bin").exists());
}

// --- Replacement between the check and the copy -------------------------------------------------

fn swapped(swap: impl FnOnce(&World)) {
    let world = World::new();
    world.put("build/a/app.elf", &good_elf());
    let policy = world.policy();
    let checked = artifacts::check(&policy, ArtifactRef::Path("build/a/app.elf")).expect("checks");
    swap(&world);
    let refusal = checked
        .stage(&world.stager, &policy)
        .expect_err("a swap after the check is detected");
    assert_eq!(
        refusal.error_type().as_str(),
        CHANGED,
        "{:?}",
        refusal.error
    );
    assert!(
        world.staged_files().is_empty(),
        "the staged copy is removed"
    );
}

#[test]
fn a_symbolic_link_swapped_in_for_the_file_after_the_check_is_detected() {
    swapped(|w| {
        fs::remove_file(w.ws("build/a/app.elf")).expect("remove");
        symlink(&w.outside.join("secret.elf"), &w.ws("build/a/app.elf"));
    });
}

#[test]
fn a_symbolic_link_swapped_in_for_a_directory_after_the_check_is_detected() {
    swapped(|w| {
        fs::rename(w.ws("build/a"), w.ws("build/old")).expect("move away");
        symlink(&w.ws("build/old"), &w.ws("build/a"));
    });
}

#[test]
fn a_file_renamed_over_the_image_after_the_check_is_detected() {
    swapped(|w| {
        w.put("build/a/new.elf", &elf32(40, 320));
        fs::rename(w.ws("build/a/new.elf"), w.ws("build/a/app.elf")).expect("rename over");
    });
}

#[test]
fn an_image_rewritten_in_place_after_the_check_is_detected() {
    swapped(|w| {
        fs::write(w.ws("build/a/app.elf"), elf32(40, 333)).expect("rewrite");
    });
}

#[test]
fn an_image_deleted_after_the_check_is_detected() {
    swapped(|w| fs::remove_file(w.ws("build/a/app.elf")).expect("remove"));
}

// --- What passes ---------------------------------------------------------------------------------

#[test]
fn a_valid_image_is_staged_privately_and_the_copy_is_removed_on_drop() {
    let world = World::new();
    let bytes = good_elf();
    world.put("build/a/app.elf", &bytes);
    let policy = world.policy();
    let staged = artifacts::resolve(&policy, &world.stager, ArtifactRef::Path("build/a/app.elf"))
        .expect("a valid image passes");
    assert!(staged.path().starts_with(world.stager.root()));
    assert_eq!(fs::read(staged.path()).expect("staged"), bytes);
    assert_eq!(staged.sha256(), sha256_hex(&bytes));
    assert_eq!(staged.display_path(), "build/a/app.elf");
    let mode = fs::metadata(world.stager.root())
        .expect("root")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    let report = staged.report().to_string();
    assert!(
        !report.contains(world.workspace.to_string_lossy().as_ref()),
        "{report}"
    );
    let path = staged.path().to_path_buf();
    drop(staged);
    assert!(!path.exists());
    assert!(world.staged_files().is_empty());
}

#[test]
fn a_staged_copy_is_named_by_the_server_whatever_the_agent_named_the_image() {
    // Backends read the staged path again as code (OpenOCD's `program` evals it inside braces,
    // gdb's `file` splits it at spaces and takes `-` as an option): only a plain extension of the
    // agent's name may reach one.
    let world = World::new();
    let policy = world.policy();
    for (name, staged_as) in [
        ("a} [exec touch pwned] {b.elf", "image.elf"),
        ("-readnow $(id) `id`; x'\"{.ELF", "image.ELF"),
        ("app.elf", "image.elf"),
    ] {
        let path = format!("build/{name}");
        world.put(&path, &good_elf());
        let staged = artifacts::resolve(&policy, &world.stager, ArtifactRef::Path(&path))
            .unwrap_or_else(|refused| panic!("{name}: {:?}", refused.error));
        let dir = staged.path().parent().expect("a staging directory");
        assert_eq!(dir.parent(), Some(world.stager.root()), "{name}");
        assert_eq!(staged.path().file_name().unwrap(), staged_as, "{name}");
        assert_eq!(
            staged.display_path(),
            path,
            "people still see the agent's name"
        );
    }
}

#[test]
fn an_uppercase_elf_extension_is_accepted_like_the_reference() {
    let world = World::new();
    world.put("build/APP.ELF", &good_elf());
    let policy = world.policy();
    assert!(artifacts::resolve(&policy, &world.stager, ArtifactRef::Path("build/APP.ELF")).is_ok());
}

#[test]
fn hex_and_bin_images_pass() {
    let world = World::new();
    world.put("build/app.hex", &ihex(&[1, 2, 3, 4, 5]));
    world.put("build/app.bin", &[1, 2, 3]);
    let policy = world.policy();
    for path in ["build/app.hex", "build/app.bin", "./build/app.bin"] {
        let staged = artifacts::resolve(&policy, &world.stager, ArtifactRef::Path(path));
        assert!(staged.is_ok(), "{path}: {:?}", staged.err());
    }
}

#[test]
fn switching_off_format_inspection_lets_a_wrong_magic_through() {
    let mut world = World::new();
    world.config.validation.inspect_known_formats = false;
    world.put("build/app.elf", b"not an elf");
    let policy = world.policy();
    assert!(artifacts::check(&policy, ArtifactRef::Path("build/app.elf")).is_ok());
}

#[test]
fn switching_off_the_root_requirement_still_keeps_the_workspace_boundary() {
    let mut world = World::new();
    world.config.validation.require_allowed_root = false;
    world.put("src/app.elf", &good_elf());
    let policy = world.policy();
    assert!(artifacts::check(&policy, ArtifactRef::Path("src/app.elf")).is_ok());
    let outside = world.outside.join("secret.elf");
    assert_refused(
        &world,
        ArtifactRef::Path(&outside.to_string_lossy()),
        INVALID,
    );
}
