//! The committed firmware images are what the sources build. The sources are rebuilt in a temp dir
//! and compared byte for byte: the Makefile maps build paths to "." and records no command line, so
//! the same compiler gives the same bytes. A different compiler version legitimately emits different
//! code, so then the rebuild must still succeed and the ELF must keep the same sections, which is
//! what the tests depend on; the version the images were built with is in firmware/build/TOOLCHAIN.

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;

use ahil_sim::firmware;

fn compiler_version() -> Option<String> {
    let output = Command::new("arm-none-eabi-gcc")
        .arg("--version")
        .process_group(0)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines().next().map(str::to_owned)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// The section names `objdump -h` lists, for a layout comparison across compiler versions.
fn sections(elf: &Path) -> Vec<String> {
    let output = Command::new("arm-none-eabi-objdump")
        .arg("-h")
        .arg(elf)
        .process_group(0)
        .output()
        .expect("objdump runs beside gcc");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() >= 6 && fields[0].parse::<u32>().is_ok()).then(|| fields[1].to_owned())
        })
        .collect()
}

#[test]
fn the_committed_firmware_is_what_its_sources_build() {
    let version =
        compiler_version().expect("arm-none-eabi-gcc is missing: run scripts/setup-debian.sh");
    let work = tempfile::tempdir().expect("temp dir");
    let source = firmware::source_dir();
    for item in [
        "src",
        "Makefile",
        "sections.ld",
        "stm32f405.ld",
        "stm32f100.ld",
    ] {
        let from = source.join(item);
        if from.is_dir() {
            copy_tree(&from, &work.path().join(item));
        } else {
            std::fs::copy(&from, work.path().join(item)).expect("copy");
        }
    }
    let status = Command::new("make")
        .args(["-s", "BUILD=out"])
        .process_group(0)
        .current_dir(work.path())
        .status()
        .expect("make runs");
    assert!(status.success(), "the firmware did not build");
    let recorded = std::fs::read_to_string(source.join("build/TOOLCHAIN"))
        .expect("firmware/build/TOOLCHAIN records the compiler");
    let same_compiler = recorded.lines().next() == Some(version.as_str());
    let stripped = firmware::image(1, "elf").with_file_name("ahil-fw-v1-nodebug.elf");
    let committed_images = firmware::MACHINES
        .into_iter()
        .flat_map(|m| [1, 2].map(|v| (m, v)))
        .flat_map(|(m, v)| ["elf", "hex", "bin"].map(|e| firmware::image_for(m, v, e)))
        .chain([stripped.with_file_name("ahil-fw-defmt.elf"), stripped]);
    for committed in committed_images {
        let relative = committed
            .strip_prefix(source.join("build"))
            .expect("under build/");
        let name = relative.display().to_string();
        let rebuilt = work.path().join("out").join(relative);
        if same_compiler {
            assert!(
                std::fs::read(&committed).expect("committed")
                    == std::fs::read(&rebuilt).expect("rebuilt"),
                "{name} differs from a rebuild with the same compiler ({version})"
            );
        } else if committed.extension().is_some_and(|e| e == "elf") {
            assert_eq!(
                sections(&committed),
                sections(&rebuilt),
                "{name} changed its sections"
            );
        }
    }
}
