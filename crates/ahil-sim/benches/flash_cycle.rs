//! Benchmark (not a test): the qemu driver's flash (ELF, verified) + reset run + `boot ok` on the UART,
//! 20 rounds on one board, median and spread, with the time to each stage. Run with
//! `cargo bench -p ahil-sim --bench flash_cycle`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ahil_drivers::probe::{Budget, DebugProbe, FlashRequest, ResetMode};
use ahil_drivers::qemu::QemuProbe;
use ahil_sim::{Board, BoardConfig, Uart, firmware};

const ROUNDS: usize = 20;

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let board = Board::start(
        BoardConfig::new(dir.path().join("sim")).with_image(firmware::image(1, "elf")),
    )
    .expect("the board starts (scripts/setup-debian.sh installs qemu)");
    let mut uart = Uart::open(&board.paths().uart()).expect("uart");
    board.run().expect("cont");
    uart.read_until("boot ok", Duration::from_secs(5))
        .expect("boot ok");
    let probe = QemuProbe::new(
        board.paths().dir(),
        "/usr/bin/gdb-multiarch",
        "netduinoplus2",
    );

    let stages = ["connect", "download", "verify", "reset"];
    let mut totals = Vec::new();
    let mut per_stage: Vec<Vec<f64>> = vec![Vec::new(); stages.len() + 1];
    for round in 0..ROUNDS {
        let version = if round % 2 == 0 { 2 } else { 1 };
        let marks = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&marks);
        let started = Instant::now();
        let budget = Budget::new(Duration::from_secs(30)).with_progress(Arc::new(move |stage| {
            sink.lock()
                .expect("bench mutex")
                .push((stage.to_owned(), started.elapsed()));
        }));
        let request = FlashRequest {
            image: firmware::image(version, "elf"),
            format: firmware::format_of("elf").expect("elf"),
            verify: true,
            reset: Some(ResetMode::Run),
        };
        probe.flash(&request, &budget).expect("flash");
        uart.read_until(&firmware::version_line(version), Duration::from_secs(5))
            .expect("the new version boots");
        let total = started.elapsed();
        totals.push(total.as_secs_f64() * 1e3);
        let marks = marks.lock().expect("bench mutex");
        let mut previous = Duration::ZERO;
        for (index, stage) in stages.iter().enumerate() {
            if let Some((_, at)) = marks.iter().find(|(name, _)| name == stage) {
                per_stage[index].push(at.saturating_sub(previous).as_secs_f64() * 1e3);
                previous = *at;
            }
        }
        per_stage[stages.len()].push(total.saturating_sub(previous).as_secs_f64() * 1e3);
    }
    let mut sorted = totals.clone();
    let med = median(&mut sorted);
    println!(
        "flash(elf, verify) + reset run + boot ok: median {med:.1} ms, min {:.1}, max {:.1} (n={ROUNDS})",
        sorted[0],
        sorted[sorted.len() - 1]
    );
    let labels = [
        "start→connect",
        "connect→download (qmp check, gdb start, attach)",
        "download→verify (load)",
        "verify→reset (read back, release)",
        "reset→boot ok (qmp reset, uart)",
    ];
    for (label, samples) in labels.iter().zip(per_stage.iter_mut()) {
        if !samples.is_empty() {
            println!("  {label}: median {:.1} ms", median(samples));
        }
    }
    board.stop().expect("stop");
}
