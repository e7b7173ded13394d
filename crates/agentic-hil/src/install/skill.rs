//! The skill document: written where a host discovers skills, recognised later by its marker line.

use std::path::Path;

use super::journal::Journal;
use super::marked::{Found, Markers};

pub const SKILL: &str = include_str!("../skill.md");

/// The line that makes a skill file ours, whatever version wrote it.
const MARKER: &str = "<!-- agentic-hil skill, written by `agentic-hil skill-install`";

/// Codex reads skills it is told about in `~/.codex/AGENTS.md`; our pointer lives between these.
pub const AGENTS_MD_MARKERS: Markers = Markers {
    start: "<!-- agentic-hil skill (managed) start -->",
    end: "<!-- agentic-hil skill (managed) end -->",
};

pub fn is_ours(text: &str) -> bool {
    text.lines().any(|line| line.starts_with(MARKER))
}

pub enum State {
    Absent,
    Current,
    /// Ours, from another version.
    Stale,
    Foreign,
}

pub fn state(path: &Path) -> State {
    match std::fs::read(path) {
        Err(_) => {
            if path.symlink_metadata().is_ok() {
                // Something unreadable (a directory, a dangling link) is not ours to replace.
                State::Foreign
            } else {
                State::Absent
            }
        }
        Ok(bytes) if bytes == SKILL.as_bytes() => State::Current,
        Ok(bytes) => {
            if String::from_utf8(bytes).is_ok_and(|text| is_ours(&text)) {
                State::Stale
            } else {
                State::Foreign
            }
        }
    }
}

pub fn agents_md_body(skill_shown: &str) -> String {
    format!(
        "## agentic-hil\n\nFor any request that touches the connected board (flash, reset, probe, debug, UART, \
CAN, bench supply, hardware tests), read and follow the skill at `{skill_shown}` and use the \
agentic-hil MCP tools; never drive the hardware with a shell tool.\n"
    )
}

/// Adds or refreshes our pointer block in AGENTS.md; `Ok(false)` when it was already current.
pub fn register_in_agents_md(
    file: &Path,
    skill_shown: &str,
    journal: &mut Journal,
) -> Result<bool, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err.to_string()),
    };
    let updated = AGENTS_MD_MARKERS
        .upsert(&text, &agents_md_body(skill_shown))
        .ok_or_else(|| "its agentic-hil marker lines are unmatched".to_owned())?;
    if updated == text {
        return Ok(false);
    }
    journal
        .write(file, updated.as_bytes())
        .map_err(|err| err.to_string())?;
    Ok(true)
}

/// Takes our pointer block out of AGENTS.md; `Ok(false)` when there was none.
pub fn unregister_in_agents_md(file: &Path, journal: &mut Journal) -> Result<bool, String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok(false);
    };
    match AGENTS_MD_MARKERS.find(&text) {
        Found::Absent => Ok(false),
        Found::Damaged => Err("its agentic-hil marker lines are unmatched".to_owned()),
        Found::At(_) => {
            let updated = AGENTS_MD_MARKERS.remove(&text).unwrap_or(text);
            if updated.trim().is_empty() {
                journal.remove(file).map_err(|err| err.to_string())?;
            } else {
                journal
                    .write(file, updated.as_bytes())
                    .map_err(|err| err.to_string())?;
            }
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_skill_carries_its_marker_and_front_matter() {
        assert!(is_ours(SKILL));
        assert!(SKILL.starts_with("---\nname: agentic-hil\ndescription: "));
    }
}
