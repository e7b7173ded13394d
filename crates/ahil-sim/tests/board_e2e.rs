//! End to end on the emulated board: the supervisor, the UART, and the qemu driver's flash, reset and
//! probe against a real QEMU and gdb-multiarch. These run in CI (scripts/setup-debian.sh installs both).

mod common;

use std::sync::Arc;
use std::time::Duration;

use ahil_drivers::Contact;
use ahil_drivers::probe::{CoreState, DebugProbe, FlashRequest, ResetMode};
use ahil_sim::board::{self, BoardState};
use ahil_sim::firmware;
use common::{Bench, UART_WAIT, budget, members_of_group, processes_started_as};

fn flash_request(version: u8, extension: &str, reset: Option<ResetMode>) -> FlashRequest {
    FlashRequest {
        image: firmware::image(version, extension),
        format: firmware::format_of(extension).expect("a known extension"),
        verify: true,
        reset,
    }
}

#[test]
fn a_started_board_waits_paused_then_boots_and_echoes_on_its_pty() {
    let bench = Bench::start(Some((1, "elf")));
    let status = bench.board.status().expect("status");
    assert!(!status.running, "the board must start paused: {status:?}");
    let mut uart = bench.uart();
    bench.board.run().expect("cont");
    uart.read_until("boot ok", UART_WAIT).expect("boot ok");
    uart.read_until(&firmware::version_line(1), UART_WAIT)
        .expect("the version line");
    uart.read_until("tick 1", UART_WAIT).expect("a tick");
    uart.write_line("hello board").expect("write");
    uart.read_until("echo: hello board", UART_WAIT)
        .expect("the echo");
    let log = std::fs::read_to_string(bench.board.paths().uart_log()).expect("uart log");
    assert!(log.contains("boot ok"), "{log}");
}

#[test]
fn flashing_elf_hex_and_bin_images_boots_each_new_version() {
    let bench = Bench::start(Some((1, "elf")));
    let probe = bench.probe();
    let mut uart = bench.uart();
    bench.board.run().expect("cont");
    uart.read_until(&firmware::version_line(1), UART_WAIT)
        .expect("v1 boots");
    for (version, extension) in [(2, "elf"), (1, "hex"), (2, "bin")] {
        let report = probe
            .flash(
                &flash_request(version, extension, Some(ResetMode::Run)),
                &budget(),
            )
            .unwrap_or_else(|error| panic!("flash {extension}: {error}"));
        assert!(report.verified, "{extension} was not verified");
        assert_eq!(report.state, CoreState::Running);
        assert_eq!(report.regions[0].0, firmware::FLASH_BASE);
        let boot = uart
            .read_until(&firmware::version_line(version), UART_WAIT)
            .unwrap_or_else(|error| panic!("v{version} from {extension} did not boot: {error}"));
        assert!(boot.contains("boot ok"), "{boot}");
    }
}

#[test]
fn the_second_board_boots_its_build_and_keeps_a_flashed_image_across_resets() {
    let machine = firmware::MACHINES[1];
    let bench = Bench::start_on(machine, Some((1, "elf")));
    let probe = bench.probe();
    let mut uart = bench.uart();
    bench.board.run().expect("cont");
    uart.read_until(&firmware::version_line_for(machine, 1), UART_WAIT)
        .expect("v1 boots on the STM32F100");
    for extension in ["hex", "bin"] {
        let request = FlashRequest {
            image: firmware::image_for(machine, 2, extension),
            format: firmware::format_of(extension).expect("a known extension"),
            verify: true,
            reset: Some(ResetMode::Run),
        };
        let report = probe
            .flash(&request, &budget())
            .unwrap_or_else(|error| panic!("flash {extension}: {error}"));
        assert!(report.verified, "{extension} was not verified");
        assert_eq!(report.regions[0].0, firmware::FLASH_BASE);
        uart.read_until(&firmware::version_line_for(machine, 2), UART_WAIT)
            .unwrap_or_else(|error| panic!("v2 from {extension} did not boot: {error}"));
    }
    // Flash is a ROM region here too: a reset boots what was flashed, not the image QEMU started with.
    probe.reset(ResetMode::Run, &budget()).expect("reset");
    let boot = uart
        .read_until(&firmware::version_line_for(machine, 2), UART_WAIT)
        .expect("v2 again after the reset");
    assert!(boot.contains("boot ok"), "{boot}");
    assert!(
        !boot.contains(&firmware::version_line_for(machine, 1)),
        "the started image came back: {boot}"
    );
    let listed = probe.list_probes(&budget()).expect("list");
    assert!(listed[0].description.contains(machine), "{listed:?}");
}

#[test]
fn a_blank_board_boots_once_flashed() {
    let bench = Bench::start(None);
    let mut uart = bench.uart();
    let report = bench
        .probe()
        .flash(&flash_request(2, "hex", Some(ResetMode::Run)), &budget())
        .expect("flash onto a blank board");
    assert_eq!(report.reset, Some(ResetMode::Run));
    uart.read_until(&firmware::version_line(2), UART_WAIT)
        .expect("v2 boots");
}

#[test]
fn flashing_without_reset_leaves_the_core_halted() {
    let bench = Bench::start(Some((1, "elf")));
    bench.board.run().expect("cont");
    let report = bench
        .probe()
        .flash(&flash_request(2, "elf", None), &budget())
        .expect("flash");
    assert_eq!(report.state, CoreState::Halted);
    assert!(!bench.board.status().expect("status").running);
}

#[test]
fn reset_modes_leave_the_core_running_or_halted_as_asked() {
    let bench = Bench::start(Some((1, "elf")));
    let probe = bench.probe();
    let mut uart = bench.uart();
    bench.board.run().expect("cont");
    uart.read_until("tick 1", UART_WAIT).expect("running");

    let report = probe.reset(ResetMode::Halt, &budget()).expect("reset halt");
    assert_eq!(report.state, CoreState::Halted);
    assert!(!bench.board.status().expect("status").running);
    uart.read_for(Duration::from_millis(50)).expect("drain");
    let quiet = uart.read_for(Duration::from_millis(300)).expect("read");
    assert!(!quiet.contains("boot ok"), "a halted core printed: {quiet}");

    let report = probe.reset(ResetMode::Run, &budget()).expect("reset run");
    assert_eq!(report.state, CoreState::Running);
    uart.read_until("boot ok", UART_WAIT)
        .expect("boots after reset run");

    let report = probe.reset(ResetMode::Init, &budget()).expect("reset init");
    assert_eq!(report.state, CoreState::Halted);
    let report = probe.reset_halt(&budget()).expect("reset into halt");
    assert_eq!(report.mode, ResetMode::Halt);
    assert!(!bench.board.status().expect("status").running);
}

#[test]
fn probe_finds_the_stub_and_leaves_the_run_state_as_it_found_it() {
    let bench = Bench::start(Some((1, "elf")));
    let probe = bench.probe();
    let halted = probe.probe(&budget()).expect("probe a paused board");
    assert_eq!(halted.state, CoreState::Halted);
    assert!(halted.target.contains("pc=0x"), "{}", halted.target);
    assert!(!bench.board.status().expect("status").running);

    bench.board.run().expect("cont");
    let running = probe.probe(&budget()).expect("probe a running board");
    assert_eq!(running.state, CoreState::Running);
    assert!(bench.board.status().expect("status").running);

    let listed = probe.list_probes(&budget()).expect("list");
    assert_eq!(listed.len(), 1);
    assert!(listed[0].description.contains("netduinoplus2"));
    assert_eq!(listed[0].id, "qemu:sim", "no absolute path in the probe id");
    let target = probe.open_gdb(&budget()).expect("gdb target");
    assert!(target.remote.ends_with("gdb.sock"));
}

#[test]
fn killing_qemu_mid_flash_reports_contact_and_leaves_no_orphan() {
    // download: gdb is writing; verify: reading back; reset: the image is in, the reset has not run.
    for stage in ["download", "verify", "reset"] {
        let bench = Bench::start(Some((1, "elf")));
        let pid = bench.board.pid();
        let probe = bench.probe();
        let gdb = bench.gdb();
        let seen_at_kill = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&seen_at_kill);
        let watched = gdb.clone();
        let kill = Arc::new(move |reached: &str| {
            if reached == stage {
                *seen.lock().expect("not poisoned") = processes_started_as(&watched);
                let target = rustix::process::Pid::from_raw(pid).expect("a real pid");
                rustix::process::kill_process(target, rustix::process::Signal::KILL)
                    .expect("kill -9 qemu");
            }
        });
        let error = probe
            .flash(
                &flash_request(2, "elf", Some(ResetMode::Run)),
                &budget().with_progress(kill),
            )
            .expect_err("the board died mid-flash");
        assert!(
            matches!(error.contact(), Contact::Made | Contact::Possible),
            "killed at {stage}, the flash claimed no contact: {error:?}"
        );
        let mut board = bench.board;
        // SIGKILL is delivered asynchronously; the exit can trail the failed call by a moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while board.is_alive() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!board.is_alive(), "qemu survived kill -9 at {stage}");
        assert!(
            members_of_group(pid).is_empty(),
            "qemu's group has survivors"
        );
        // The scan is scoped to this bench's own gdb, and it does see that gdb while it runs (the
        // reset goes through QEMU's monitor, with gdb already gone).
        assert!(
            stage == "reset" || !seen_at_kill.lock().expect("not poisoned").is_empty(),
            "the bench's gdb was not seen running at {stage}"
        );
        assert!(
            processes_started_as(&gdb).is_empty(),
            "gdb was left running after {stage}"
        );
        // The dead board now gives proof of no contact.
        let error = probe
            .reset(ResetMode::Run, &budget())
            .expect_err("nothing to reset");
        assert!(matches!(error.contact(), Contact::None { .. }), "{error:?}");
    }
}

#[test]
fn stopping_or_dropping_a_board_leaves_no_process_in_its_group() {
    let bench = Bench::start(Some((1, "elf")));
    let pid = bench.board.pid();
    bench.board.run().expect("cont");
    let status = bench.board.stop().expect("stop");
    assert!(status.is_some_and(|s| s.success()), "qemu quit: {status:?}");
    assert!(members_of_group(pid).is_empty());

    let dropped = Bench::start(Some((1, "elf")));
    let pid = dropped.board.pid();
    drop(dropped);
    assert!(members_of_group(pid).is_empty());
}

#[test]
fn another_process_sees_the_board_through_its_state_directory_and_can_stop_it() {
    let bench = Bench::start(Some((1, "elf")));
    let dir = bench.board.paths().dir().to_path_buf();
    let BoardState::Running { pid, status } = board::status(&dir) else {
        panic!("the board is not seen");
    };
    assert_eq!(pid, Some(bench.board.pid()));
    assert!(!status.running);
    assert!(matches!(
        ahil_sim::Board::start(ahil_sim::BoardConfig::new(&dir)),
        Err(ahil_sim::BoardError::AlreadyRunning(_))
    ));
    let owned = bench.board;
    let supervisor = std::thread::spawn(move || owned.wait());
    assert!(board::stop(&dir).expect("stop"), "a board was running");
    assert_eq!(board::status(&dir), BoardState::NotRunning);
    let exit = supervisor
        .join()
        .expect("the supervisor thread")
        .expect("wait");
    assert!(exit.success(), "qemu quit cleanly: {exit:?}");
}

#[test]
fn a_board_restarted_with_a_new_image_boots_it() {
    let bench = Bench::start(Some((1, "elf")));
    let board = bench
        .board
        .restart_with(firmware::image(2, "bin"))
        .expect("restart");
    let mut uart = ahil_sim::Uart::open(&board.paths().uart()).expect("uart");
    board.run().expect("cont");
    uart.read_until(&firmware::version_line(2), UART_WAIT)
        .expect("v2 boots");
}

#[test]
fn the_fault_and_reset_commands_reach_the_firmware() {
    let bench = Bench::start(Some((1, "elf")));
    let mut uart = bench.uart();
    bench.board.run().expect("cont");
    uart.read_until("tick 1", UART_WAIT).expect("running");
    uart.write_line("reset").expect("write");
    uart.read_until("boot ok", UART_WAIT)
        .expect("the firmware reset itself");
    uart.write_line("fault").expect("write");
    uart.read_until("fault: hardfault", UART_WAIT)
        .expect("the hard fault handler ran");
}

#[test]
fn a_blank_board_let_run_aborts_without_a_core_file_and_is_reaped() {
    let bench = Bench::start(None);
    let pid = bench.board.pid();
    // QEMU aborts on the lockup, possibly before it answers the `cont`.
    let _ = bench.board.run();
    let mut board = bench.board;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while board.is_alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!board.is_alive(), "a blank board kept running");
    assert!(members_of_group(pid).is_empty());
    let cores: Vec<_> = std::fs::read_dir(board.paths().dir())
        .expect("state dir")
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("core"))
        .collect();
    assert!(cores.is_empty(), "a core file was written: {cores:?}");
    let log = std::fs::read_to_string(board.paths().qemu_log()).expect("qemu log");
    assert!(log.contains("Lockup"), "{log}");
}

#[test]
fn a_flash_cancelled_before_gdb_connects_proves_no_contact_and_leaves_the_board_running() {
    let bench = Bench::start(Some((1, "elf")));
    bench.board.run().expect("cont");
    let budget = budget();
    budget.cancel_flag().cancel();
    let error = bench
        .probe()
        .flash(&flash_request(2, "elf", Some(ResetMode::Run)), &budget)
        .expect_err("cancelled");
    assert!(matches!(error.contact(), Contact::None { .. }), "{error:?}");
    assert!(bench.board.status().expect("status").running);
}
