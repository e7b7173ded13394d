//! The bench supply simulator as its own executable: `ahil-psu-sim --link PATH [--mode M] [--idn TEXT]
//! [--journal FILE]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(ahil_sim::psu_sim::main(&args));
}
