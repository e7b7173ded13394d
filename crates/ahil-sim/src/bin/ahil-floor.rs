//! The benchmarks' floors as their own executable: `ahil-floor echo | audited <dir> | pty <device>`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ahil_sim::floor::main(&args));
}
