//! ahil-sim's scripted fakes of the bench's command-line tools as tests install and read them:
//! `probe_cli.py` stands in for OpenOCD, pyOCD, STM32_Programmer_CLI and esptool by the name it is
//! installed under, plays the scenario written in `fake-scenario` beside it and records each run's
//! argv in `calls.jsonl` there.

use std::path::{Path, PathBuf};

use super::{World, make_executable};

/// ahil-sim's `src/fakes`.
pub fn fakes_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ahil-sim/src/fakes")
}

/// The world's `tools/` folder, made if it is not there yet.
pub fn tools(world: &World) -> PathBuf {
    let tools = world.home.join("tools");
    std::fs::create_dir_all(&tools).expect("tools dir");
    tools
}

/// Installs `probe_cli.py` in the world's `tools/` as `exe_name` (the tool it stands in for),
/// playing `scenario`: its path, for the configuration's `executable`.
pub fn install_probe_cli(world: &World, exe_name: &str, scenario: &str) -> PathBuf {
    let tools = tools(world);
    let exe = tools.join(exe_name);
    std::fs::copy(fakes_dir().join("probe_cli.py"), &exe).expect("the fake is installed");
    make_executable(&exe);
    play(&tools, scenario);
    exe
}

/// Makes the fakes in `tools` play `scenario` from their next run on.
pub fn play(tools: &Path, scenario: &str) {
    std::fs::write(tools.join("fake-scenario"), scenario).expect("scenario");
}

/// The argv of every run the fakes in `tools` recorded, in order.
pub fn calls(tools: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(tools.join("calls.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("call line"))
        .collect()
}
