//! Audit append with fsync: one chained event per call (canonical line, sidecar rewrite, mirror
//! line, each fsynced, under the log's lock). `cargo bench -p ahil-gate --bench audit_append`.
//! Prints the median records per second over several rounds; not a test, nothing is asserted.

use std::time::{Duration, Instant};

use ahil_gate::audit::Audit;
use serde_json::json;

const ROUNDS: usize = 7;
const RECORDS: usize = 200;

fn main() {
    let root = tempfile::tempdir().expect("temp dir");
    let workspace = root.path().join("ws");
    let config = root.path().join("config.yaml");
    std::fs::create_dir_all(&workspace).expect("workspace");
    std::fs::write(&config, "version: 3\n").expect("config");
    let audit = Audit::new(
        &root.path().join("state"),
        &config,
        &workspace,
        ".agentic-hil/reports",
        ".agentic-hil/logs",
    );
    let mut rates = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let log = format!("com-bench-{round}.jsonl");
        let start = Instant::now();
        for n in 0..RECORDS {
            audit
                .append_event(
                    &log,
                    &json!({"direction": "tx", "bytes": 8, "hex": "68656c6c6f0d0a00", "n": n}),
                )
                .expect("append");
        }
        let elapsed = start.elapsed().max(Duration::from_micros(1));
        #[allow(clippy::cast_precision_loss, reason = "a rate for people to read")]
        let rate = RECORDS as f64 / elapsed.as_secs_f64();
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    println!(
        "audit append with fsync: median {median:.0} records/s over {ROUNDS} rounds of {RECORDS} (min {:.0}, max {:.0})",
        rates[0],
        rates[rates.len() - 1]
    );
}
