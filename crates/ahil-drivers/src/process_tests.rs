use super::*;
use crate::probe_cli::fake::install_sh;

/// Live members of group `pgid` right now: the runner promises none once it returns.
fn survivors(pgid: i32) -> Vec<i32> {
    group_members(pgid).expect("/proc is readable")
}

/// `script` run by `sh -c` under `deadline`.
fn sh(script: &str, deadline: Duration) -> Finished {
    run(&Command::new(SHELL).args(["-c", script]).deadline(deadline)).expect("sh runs")
}

#[test]
fn a_child_that_exits_reports_its_exit_code_and_output() {
    let finished = run(&Command::new(SHELL).args(["-c", "echo out; echo err >&2; exit 7"]))
        .expect("sh is on every POSIX host");
    assert_eq!(finished.exit, Exit::Code(7));
    assert_eq!(finished.stdout_text(), "out\n");
    assert_eq!(finished.stderr_text(), "err\n");
    assert!(!finished.success());
}

#[test]
fn a_zero_exit_is_success() {
    let finished = run(&Command::new("/bin/true")).expect("true runs");
    assert!(finished.success());
}

#[test]
fn a_child_killed_at_the_deadline_leaves_no_process_of_its_group_alive() {
    let started = Instant::now();
    let finished = sh("sleep 30 & sleep 30", Duration::from_millis(300));
    assert_eq!(finished.exit, Exit::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the deadline was not honoured"
    );
    assert_eq!(survivors(finished.pgid), Vec::<i32>::new());
}

#[test]
fn background_children_of_a_clean_exit_are_killed_with_the_group() {
    let finished = sh(
        "sleep 30 >/dev/null 2>&1 & echo started",
        Duration::from_secs(10),
    );
    assert_eq!(finished.exit, Exit::Code(0));
    assert_eq!(survivors(finished.pgid), Vec::<i32>::new());
}

#[test]
fn a_background_child_holding_the_pipe_does_not_hang_the_runner() {
    let started = Instant::now();
    let finished = sh("sleep 30 & echo early", Duration::from_secs(10));
    assert_eq!(finished.exit, Exit::Code(0));
    assert_eq!(finished.stdout_text(), "early\n");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_direct_child_is_reaped_not_left_a_zombie() {
    let finished = sh("sleep 30", Duration::from_millis(100));
    assert!(
        !Path::new(&format!("/proc/{}", finished.pgid)).exists(),
        "leader left as a zombie"
    );
}

#[test]
fn captured_output_stops_at_the_cap_and_says_so() {
    let finished = run(&Command::new(SHELL)
        .args(["-c", "head -c 100000 /dev/zero; echo tail >&2"])
        .output_cap(1000))
    .expect("sh runs");
    assert_eq!(finished.stdout.len(), 1000);
    assert!(finished.stdout_truncated);
    assert_eq!(finished.stderr_text(), "tail\n");
    assert!(!finished.stderr_truncated);
    assert_eq!(
        finished.exit,
        Exit::Code(0),
        "the child must not block on a full pipe"
    );
}

#[test]
fn a_cancelled_call_kills_its_child_at_once() {
    let flag = CancelFlag::default();
    let guard = flag.guard();
    let worker = {
        let flag = flag.clone();
        thread::spawn(move || {
            run(&Command::new(SHELL)
                .args(["-c", "sleep 30 & sleep 30"])
                .deadline(Duration::from_secs(30))
                .cancel_on(flag))
        })
    };
    thread::sleep(Duration::from_millis(100));
    drop(guard);
    let finished = worker
        .join()
        .expect("runner thread does not panic")
        .expect("sh runs");
    assert_eq!(finished.exit, Exit::Cancelled);
    assert_eq!(survivors(finished.pgid), Vec::<i32>::new());
}

#[test]
fn a_missing_program_is_an_error_not_a_result() {
    let error =
        run(&Command::new("/nonexistent/agentic-hil-test-binary")).expect_err("cannot spawn");
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
}

#[test]
fn a_signal_the_child_got_elsewhere_is_reported_as_a_signal() {
    let finished = run(&Command::new(SHELL).args(["-c", "kill -TERM $$"])).expect("sh runs");
    assert_eq!(finished.exit, Exit::Signal(libc::SIGTERM));
}

#[test]
fn a_program_named_without_an_absolute_path_is_refused_before_anything_runs() {
    let error =
        run(&Command::new("sh").args(["-c", "exit 0"])).expect_err("a bare name is refused");
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    assert!(
        error.to_string().contains("absolute pinned path"),
        "{error}"
    );
}

#[test]
fn a_script_runs_by_its_own_path_and_names_its_interpreter_itself() {
    let (_dir, script) = install_sh("fake_tool.py", "echo \"argv0=$0\"");
    let finished = run(&Command::new(&script)).expect("the script runs");
    assert_eq!(
        finished.stdout_text().trim(),
        format!("argv0={}", script.display())
    );
}

#[test]
fn a_piped_tool_runs_in_its_own_directory_and_leads_its_own_process_group() {
    let (dir, script) = install_sh("tool.sh", "pwd -P\necho $$\ncut -d' ' -f5 /proc/$$/stat");
    let mut command = piped_tool(&script, Stdio::null()).expect("an absolute path is accepted");
    let output = spawn_retrying_busy_text(&mut command)
        .expect("the script runs")
        .wait_with_output()
        .expect("the script ends");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let own = dir.path().canonicalize().expect("temp dir resolves");
    assert_eq!(lines.first().copied(), own.to_str());
    assert_eq!(
        lines.get(1),
        lines.get(2),
        "pid and process group differ: {text}"
    );
}

#[test]
fn a_piped_tool_named_without_an_absolute_path_is_refused() {
    assert!(piped_tool(Path::new("tool.sh"), Stdio::null()).is_err());
}

#[test]
fn a_child_sees_only_the_child_environment_whatever_the_servers_holds() {
    // The test process's own environment stands in for the server's; these names must not pass.
    let leaked = [
        "PYTHONPATH",
        "LD_PRELOAD",
        "PYTHONSTARTUP",
        "GDBHISTFILE",
        "CARGO_HOME",
    ];
    let finished = run(&Command::new(SHELL).args(["-c", "env"])).expect("sh runs");
    let seen: Vec<String> = finished
        .stdout_text()
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_owned()))
        .filter(|k| k != "PWD" && k != "SHLVL" && k != "_")
        .collect();
    let mut allowed: Vec<String> = child_environment()
        .into_iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    allowed.sort();
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, allowed, "the child's environment is the allowlist");
    assert!(leaked.iter().all(|k| !seen.iter().any(|s| s == k)));
    assert!(
        finished
            .stdout_text()
            .contains(&format!("PATH={CHILD_PATH}\n")),
        "{}",
        finished.stdout_text()
    );
}

#[test]
fn the_log_line_quotes_arguments_with_spaces_quotes_or_backslashes() {
    let line = Command::new("/bin/openocd")
        .args(["-c", "init; targets", "a\"b", "plain"])
        .display_line();
    assert_eq!(line, r#"/bin/openocd -c "init; targets" "a\"b" plain"#);
}

#[test]
fn the_group_killer_refuses_to_signal_its_own_group_or_init() {
    assert!(kill_process_group(0).is_err());
    assert!(kill_process_group(1).is_err());
}

#[test]
fn each_stdout_line_is_heard_as_it_arrives_and_still_captured() {
    let started = Instant::now();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let hook = {
        let heard = Arc::clone(&heard);
        LineHook::new(move |line| {
            heard
                .lock()
                .expect("heard")
                .push((line.to_owned(), started.elapsed()));
        })
    };
    let finished = run(&Command::new(SHELL)
        .args([
            "-c",
            "printf 'first\\r\\n'; sleep 1; printf 'second\\nno newline'",
        ])
        .on_stdout_line(hook))
    .expect("sh runs");
    assert_eq!(finished.stdout_text(), "first\r\nsecond\nno newline");
    let heard = heard.lock().expect("heard").clone();
    let lines: Vec<&str> = heard.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        lines,
        ["first", "second"],
        "a partial last line is not a line"
    );
    assert!(
        heard[0].1 < Duration::from_millis(900),
        "the first line waited for the child's end: {heard:?}"
    );
}
