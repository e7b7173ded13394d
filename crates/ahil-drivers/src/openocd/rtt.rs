//! OpenOCD as an RTT server for one RTT session: `rtt setup <start> <size> "SEGGER RTT"`, `init`,
//! `rtt start`, and `rtt server start <port> <channel>` per channel, each port a loopback one reserved
//! for it, gdb, tcl and telnet off, and every listener checked to be on loopback (as for the gdb
//! server: `bindto 127.0.0.1` is asked, then verified, never trusted). OpenOCD reads the rings
//! itself; the session takes each channel's TCP stream ([`crate::rtt::stream`]).
//!
//! OpenOCD's `init` examines the target without halting it, and RTT needs no halt.

use std::ffi::OsString;
use std::time::Duration;

use super::OpenOcd;
use super::gdbserver::{GdbServer, ServerError, reserve_port, spawn};
use crate::rtt::stream::ChannelPort;

/// A running OpenOCD serving RTT channels on loopback ports.
pub struct RttServer {
    pub process: GdbServer,
    pub ports: Vec<ChannelPort>,
    /// Where OpenOCD says it found the control block, if it said so yet.
    pub address: Option<u32>,
}

impl OpenOcd {
    /// The argv after the executable: search `[start, start + size)` for the block and serve each
    /// channel on its port.
    pub fn rtt_server_argv(&self, start: u32, size: u32, ports: &[ChannelPort]) -> Vec<OsString> {
        let mut commands = vec![
            "bindto 127.0.0.1".to_owned(),
            "gdb_port disabled".to_owned(),
            "tcl_port disabled".to_owned(),
            "telnet_port disabled".to_owned(),
            // Before `init` (OpenOCD takes it in any mode), so a wrong argument is refused before
            // any adapter opens, and the real openocd's test checks our syntax without a probe.
            format!("rtt setup {start:#010x} {size} \"SEGGER RTT\""),
            "init".to_owned(),
            "rtt start".to_owned(),
        ];
        for at in ports {
            commands.push(format!("rtt server start {} {}", at.port, at.index));
        }
        self.board_argv(commands)
    }

    /// Start OpenOCD serving `channels` (RTT channel indexes; each serves its up and down channel
    /// of that number) and wait up to `limit` for the first port and the loopback check.
    pub fn start_rtt_server(
        &self,
        start: u32,
        size: u32,
        channels: &[u32],
        limit: Duration,
    ) -> Result<RttServer, ServerError> {
        let Some((first, rest)) = channels.split_first() else {
            return Err(ServerError::Spawn(std::io::Error::other(
                "no RTT channel to serve",
            )));
        };
        // The other channels' ports are held until the argv is built, right before OpenOCD starts.
        let mut held = Vec::new();
        let mut ports = Vec::new();
        for index in rest {
            let (listener, port) = reserve_port().map_err(ServerError::Spawn)?;
            held.push(listener);
            ports.push(ChannelPort {
                index: *index,
                port,
            });
        }
        let mut all = Vec::new();
        let process = spawn(
            &self.settings.executable,
            |port| {
                all.push(ChannelPort {
                    index: *first,
                    port,
                });
                all.extend(ports.iter().copied());
                drop(held);
                self.rtt_server_argv(start, size, &all)
            },
            limit,
        )?;
        let address = found_at(&process.tails().text());
        Ok(RttServer {
            process,
            ports: all,
            address,
        })
    }
}

/// `rtt: Control block found at 0x20000070`.
pub fn found_at(text: &str) -> Option<u32> {
    text.lines().find_map(|line| {
        let rest = line.split("Control block found at ").nth(1)?;
        let hex = rest.trim().strip_prefix("0x")?;
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        u32::from_str_radix(&hex[..end], 16).ok()
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::probe_cli::CliSettings;

    fn openocd(executable: PathBuf) -> OpenOcd {
        OpenOcd::new(
            CliSettings {
                executable,
                probe_id: Some("SIM0".into()),
                timeout: Duration::from_secs(5),
            },
            "interface/stlink.cfg",
            "target/stm32f4x.cfg",
        )
    }

    #[test]
    fn an_rtt_server_searches_the_configured_range_and_serves_each_channel_with_the_other_servers_off()
     {
        let ports = [
            ChannelPort {
                index: 0,
                port: 40100,
            },
            ChannelPort {
                index: 1,
                port: 40101,
            },
        ];
        let argv: Vec<String> = openocd(PathBuf::from("openocd"))
            .rtt_server_argv(0x2000_0000, 4096, &ports)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let commands: Vec<&str> = argv
            .iter()
            .zip(argv.iter().skip(1))
            .filter(|(flag, _)| *flag == "-c")
            .map(|(_, command)| command.as_str())
            .collect();
        assert_eq!(
            commands,
            [
                "adapter serial SIM0",
                "bindto 127.0.0.1",
                "gdb_port disabled",
                "tcl_port disabled",
                "telnet_port disabled",
                "rtt setup 0x20000000 4096 \"SEGGER RTT\"",
                "init",
                "rtt start",
                "rtt server start 40100 0",
                "rtt server start 40101 1",
            ]
        );
    }

    #[test]
    fn the_control_blocks_address_is_read_from_openocds_words() {
        let text = "Info : rtt: Searching for control block 'SEGGER RTT'\n\
                    Info : rtt: Control block found at 0x20000070\n";
        assert_eq!(found_at(text), Some(0x2000_0070));
        assert_eq!(found_at("Info : rtt: No control block found\n"), None);
    }
}
