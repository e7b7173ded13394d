//! Link arguments for the release binary; see `build/link.rs` and decision 0026.

#[path = "build/link.rs"]
mod link;

fn main() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let manifest_dir = var("CARGO_MANIFEST_DIR");
    let order_file = format!("{manifest_dir}/startup-order.txt");
    let linker = std::env::var("RUSTC_LINKER").ok();
    let (profile, target, rustflags) = (
        var("PROFILE"),
        var("TARGET"),
        var("CARGO_ENCODED_RUSTFLAGS"),
    );
    let build = link::Build {
        profile: &profile,
        target: &target,
        linker: linker.as_deref(),
        rustflags: &rustflags,
        order_file: &order_file,
    };
    for arg in link::release_link_args(&build) {
        println!("cargo:rustc-link-arg-bins={arg}");
    }
    // `scripts/startup-order.py` asks for the link map it reads the executed functions' names from.
    if let Ok(map) = std::env::var("AHIL_LINK_MAP") {
        println!("cargo:rustc-link-arg-bins=-Wl,-Map={map}");
    }
    println!("cargo:rerun-if-changed=startup-order.txt");
    println!("cargo:rerun-if-changed=build/link.rs");
    println!("cargo:rerun-if-env-changed=AHIL_LINK_MAP");
}
