//! The CAN bridge simulator as its own executable: `ahil-can-bridge-sim [--mode M] [--period-ms N]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ahil_sim::can_bridge::main(&args));
}
