//! The agent hosts we register with: where each keeps its user-level MCP servers and skills, and the
//! entry it expects.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde_json::{Value, json};

/// The server's name in every host's registry.
pub const SERVER_NAME: &str = "agentic-hil";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    #[value(name = "claude-code", alias = "claude", alias = "claude_code")]
    ClaudeCode,
    #[value(name = "codex", alias = "codex-cli", alias = "openai-codex")]
    Codex,
    #[value(name = "cursor")]
    Cursor,
    #[value(name = "vscode", alias = "vs-code", alias = "code")]
    Vscode,
    #[value(name = "gemini", alias = "gemini-cli")]
    Gemini,
    #[value(name = "opencode", alias = "open-code")]
    Opencode,
}

/// How a host stores its registration.
pub enum Registry {
    /// A JSON object at `keys` inside a JSON file, holding one entry per server.
    Json {
        file: PathBuf,
        keys: &'static [&'static str],
    },
    /// A TOML file we only touch through a block between our own marker lines.
    TomlBlock { file: PathBuf },
}

impl Agent {
    pub const ALL: [Agent; 6] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::Cursor,
        Agent::Vscode,
        Agent::Gemini,
        Agent::Opencode,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Cursor => "cursor",
            Agent::Vscode => "vscode",
            Agent::Gemini => "gemini",
            Agent::Opencode => "opencode",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Cursor => "Cursor",
            Agent::Vscode => "VS Code",
            Agent::Gemini => "Gemini CLI",
            Agent::Opencode => "opencode",
        }
    }

    pub fn registry(self, home: &Path) -> Registry {
        match self {
            Agent::ClaudeCode => Registry::Json {
                file: home.join(".claude.json"),
                keys: &["mcpServers"],
            },
            Agent::Codex => Registry::TomlBlock {
                file: home.join(".codex/config.toml"),
            },
            Agent::Cursor => Registry::Json {
                file: home.join(".cursor/mcp.json"),
                keys: &["mcpServers"],
            },
            // VS Code's user-profile `mcp.json` (default profile, Linux path), whose documented
            // format is a top-level `servers` object of `{type: "stdio", command, args}` entries:
            // https://code.visualstudio.com/docs/copilot/reference/mcp-configuration
            Agent::Vscode => Registry::Json {
                file: home.join(".config/Code/User/mcp.json"),
                keys: &["servers"],
            },
            // https://github.com/google-gemini/gemini-cli/blob/main/docs/tools/mcp-server.md
            Agent::Gemini => Registry::Json {
                file: home.join(".gemini/settings.json"),
                keys: &["mcpServers"],
            },
            // https://opencode.ai/docs/mcp-servers/ : local servers take the command as one array.
            Agent::Opencode => Registry::Json {
                file: home.join(".config/opencode/opencode.json"),
                keys: &["mcp"],
            },
        }
    }

    /// The entry this host needs to launch `launcher mcp-stdio`.
    pub fn entry(self, launcher: &str) -> Value {
        match self {
            Agent::ClaudeCode | Agent::Vscode => {
                json!({"type": "stdio", "command": launcher, "args": ["mcp-stdio"]})
            }
            Agent::Cursor | Agent::Gemini | Agent::Codex => {
                json!({"command": launcher, "args": ["mcp-stdio"]})
            }
            Agent::Opencode => {
                json!({"type": "local", "command": [launcher, "mcp-stdio"], "enabled": true})
            }
        }
    }

    /// Whether `entry` is exactly what we write for some agentic-hil binary. An entry for a binary
    /// that has since moved is still ours to replace or remove; anything else the operator wrote.
    pub fn is_our_entry(self, entry: &Value) -> bool {
        let launcher = match self {
            Agent::Opencode => entry.get("command").and_then(|c| c.get(0)),
            _ => entry.get("command"),
        };
        let Some(launcher) = launcher.and_then(Value::as_str) else {
            return false;
        };
        looks_like_our_launcher(launcher) && self.entry(launcher) == *entry
    }

    /// Where the host discovers user-level skills, for the hosts that have such a directory.
    pub fn skill_file(self, home: &Path) -> Option<PathBuf> {
        let root = match self {
            Agent::ClaudeCode => home.join(".claude/skills"),
            Agent::Codex => home.join(".codex/skills"),
            Agent::Opencode => home.join(".config/opencode/skills"),
            Agent::Cursor | Agent::Vscode | Agent::Gemini => return None,
        };
        Some(root.join(SERVER_NAME).join("SKILL.md"))
    }
}

pub fn looks_like_our_launcher(launcher: &str) -> bool {
    let path = Path::new(launcher);
    path.is_absolute() && path.file_name().is_some_and(|n| n == "agentic-hil")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_we_wrote_for_a_moved_binary_is_still_ours() {
        for agent in Agent::ALL {
            let old = agent.entry("/opt/old/bin/agentic-hil");
            assert!(agent.is_our_entry(&old), "{}", agent.id());
        }
    }

    #[test]
    fn an_entry_with_anything_added_or_another_program_is_foreign() {
        let mut extra = Agent::ClaudeCode.entry("/usr/bin/agentic-hil");
        extra["env"] = json!({"AGENTIC_HIL_CONFIG": "/x"});
        assert!(!Agent::ClaudeCode.is_our_entry(&extra));
        assert!(!Agent::ClaudeCode.is_our_entry(&Agent::ClaudeCode.entry("/usr/bin/other")));
        assert!(!Agent::ClaudeCode.is_our_entry(&Agent::ClaudeCode.entry("agentic-hil")));
        assert!(!Agent::Cursor.is_our_entry(&Agent::ClaudeCode.entry("/usr/bin/agentic-hil")));
    }
}
