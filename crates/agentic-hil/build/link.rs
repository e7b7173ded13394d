//! The release binary's extra link arguments (decision 0026), shared by `build.rs` and the test
//! that pins them (`tests/release_link.rs`): a plain function of the build's environment.

/// What `build.rs` reads from cargo's environment.
pub struct Build<'a> {
    /// `PROFILE`: "release" for `--release`, `cargo bench` and `cargo install`.
    pub profile: &'a str,
    /// `TARGET`, e.g. "x86_64-unknown-linux-gnu".
    pub target: &'a str,
    /// `RUSTC_LINKER`: set when the build names its own linker.
    pub linker: Option<&'a str>,
    /// `CARGO_ENCODED_RUSTFLAGS`, flags separated by 0x1f.
    pub rustflags: &'a str,
    /// The start-up symbol order file, as an absolute path.
    pub order_file: &'a str,
}

/// `-Wl,` arguments for the binary. Only the release build of a glibc target gets them: the debug
/// build and the tests link as before.
pub fn release_link_args(build: &Build) -> Vec<String> {
    if build.profile != "release" || !build.target.ends_with("-linux-gnu") {
        return Vec::new();
    }
    // DT_RELR (glibc 2.36, GNU ld 2.38, lld 15): the position-independent executable's relative
    // relocations as a bitmap of a few KiB instead of a 0.8 MB table the loader reads at every start.
    let mut args = vec!["-Wl,-z,pack-relative-relocs".to_owned()];
    if uses_bundled_lld(build) {
        // The functions run up to the `tools/list` answer, laid out together so that start-up
        // touches about 2 MiB of code instead of pages spread over all 13 MiB. A name the file lists
        // and the build no longer has is skipped: a stale file costs memory, never correctness.
        args.push(format!("-Wl,--symbol-ordering-file={}", build.order_file));
        args.push("-Wl,--no-warn-symbol-ordering".to_owned());
    }
    args
}

/// `--symbol-ordering-file` is an lld option: rustc links x86_64 Linux through its own lld unless
/// the build names a linker or changes how rustc picks one; then GNU ld may be the one that runs.
fn uses_bundled_lld(build: &Build) -> bool {
    build.target == "x86_64-unknown-linux-gnu"
        && build.linker.is_none()
        && !build.rustflags.split('\x1f').any(|flag| {
            [
                "linker",
                "link-self-contained",
                "linker-flavor",
                "linker-features",
            ]
            .iter()
            .any(|option| flag.contains(option))
        })
}
