//! Processes a test's servers started, found through /proc by the HOME in their environment (every
//! child of a server the test ran inherits it).

use std::path::Path;

/// Every process whose environment has `HOME=home`, with its command line (arguments joined by
/// spaces); one whose environment or command line cannot be read is not listed.
pub fn under_home(home: &Path) -> Vec<(u32, String)> {
    let wanted = format!("HOME={}", home.display());
    pids()
        .filter_map(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let ours = environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes());
            ours.then(|| (pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
        })
        .collect()
}

/// Every process id /proc lists now (none when /proc cannot be read).
pub fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
}

/// The processes under `home` whose command line contains `marker`.
pub fn running_under(home: &Path, marker: &str) -> Vec<u32> {
    under_home(home)
        .into_iter()
        .filter(|(_, cmdline)| cmdline.contains(marker))
        .map(|(pid, _)| pid)
        .collect()
}

/// The gdb processes (gdb/MI, as the server runs it) under `home`.
pub fn gdbs_under(home: &Path) -> Vec<u32> {
    running_under(home, "--interpreter=mi")
}
