//! Links the executables as non-PIE (decision 0012): a position-independent executable makes the
//! loader apply every relocation of the binary at start, reading the whole `.rela.dyn` table and
//! copying every page of `.data.rel.ro`, which was most of the resident memory at `tools/list`.
fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
