//! The release binary's link arguments (`build/link.rs`, decision 0026): packed relative
//! relocations and the start-up function order reach the release link, and nothing else changes.

#[path = "../build/link.rs"]
mod link;

use link::{Build, release_link_args};

fn build<'a>(profile: &'a str, target: &'a str) -> Build<'a> {
    Build {
        profile,
        target,
        linker: None,
        rustflags: "",
        order_file: "/src/crates/agentic-hil/startup-order.txt",
    }
}

#[test]
fn the_release_build_packs_relative_relocations_and_orders_start_up_code() {
    let args = release_link_args(&build("release", "x86_64-unknown-linux-gnu"));
    assert_eq!(
        args,
        [
            "-Wl,-z,pack-relative-relocs",
            "-Wl,--symbol-ordering-file=/src/crates/agentic-hil/startup-order.txt",
            "-Wl,--no-warn-symbol-ordering",
        ]
    );
}

#[test]
fn the_debug_build_links_as_before() {
    assert!(release_link_args(&build("debug", "x86_64-unknown-linux-gnu")).is_empty());
}

#[test]
fn a_target_without_glibc_gets_no_extra_link_argument() {
    for target in ["x86_64-unknown-linux-musl", "aarch64-apple-darwin"] {
        assert!(
            release_link_args(&build("release", target)).is_empty(),
            "{target}"
        );
    }
}

#[test]
fn a_build_that_picks_its_own_linker_gets_no_lld_only_option() {
    let named = Build {
        linker: Some("/usr/bin/x86_64-linux-gnu-gcc"),
        ..build("release", "x86_64-unknown-linux-gnu")
    };
    let flavoured = Build {
        rustflags: "-C\x1flink-self-contained=-linker",
        ..build("release", "x86_64-unknown-linux-gnu")
    };
    let other_target = build("release", "aarch64-unknown-linux-gnu");
    for case in [named, flavoured, other_target] {
        assert_eq!(
            release_link_args(&case),
            ["-Wl,-z,pack-relative-relocs"],
            "{}",
            case.target
        );
    }
}

#[test]
fn the_start_up_order_file_lists_one_symbol_a_line() {
    let order = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/startup-order.txt"))
        .expect("the order file is in the crate");
    assert!(!order.is_empty(), "scripts/startup-order.py writes it");
    for line in order.lines() {
        assert!(
            !line.is_empty() && !line.contains(char::is_whitespace),
            "not a symbol name: {line:?}"
        );
    }
}
