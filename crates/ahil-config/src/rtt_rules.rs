//! The rules of a debugger's `rtt:` section that its shape cannot express: exactly one way to find
//! the control block, addresses a 32-bit target has, and channel names an agent can tell apart.

use std::collections::BTreeSet;

use crate::error::{ConfigError, Refusal};
use crate::model::{Debugger, RttDirection, RttFormat, parse_address};

fn refuse(field: String, summary: impl Into<String>) -> ConfigError {
    ConfigError::invalid(Refusal::new(summary).at(field))
}

/// Check `debuggers.<name>.rtt`, if present.
pub(crate) fn check(name: &str, d: &Debugger) -> Result<(), ConfigError> {
    let Some(rtt) = &d.rtt else {
        return Ok(());
    };
    let at = |k: &str| format!("debuggers.{name}.rtt.{k}");
    let ways = [
        rtt.control_block.is_some(),
        rtt.scan.is_some(),
        rtt.from_elf,
    ];
    if ways.iter().filter(|w| **w).count() != 1 {
        return Err(ConfigError::invalid(
            Refusal::new(
                "An rtt section names exactly one of control_block, scan and from_elf: where the \
                 control block is.",
            )
            .at(format!("debuggers.{name}.rtt"))
            .fix("Set `control_block: \"0x…\"`, or `scan: {start: \"0x…\", size: …}`, or `from_elf: true`."),
        ));
    }
    let in_32_bits = |text: &str, extra: u64| {
        parse_address(text).is_some_and(|a| a.checked_add(extra).is_some_and(|end| end <= 1 << 32))
    };
    if let Some(address) = &rtt.control_block
        && !in_32_bits(address, 0)
    {
        return Err(refuse(
            at("control_block"),
            format!("{address} is not a 32-bit address."),
        ));
    }
    if let Some(scan) = &rtt.scan
        && !in_32_bits(&scan.start, scan.size)
    {
        return Err(refuse(
            at("scan"),
            "The scan range must lie within the 32-bit address space.",
        ));
    }
    if rtt.channels.is_empty() {
        return Err(ConfigError::invalid(
            Refusal::new(
                "An rtt section lists the channels an agent may use; this one lists none.",
            )
            .at(at("channels"))
            .fix("Add `channels: [{name: terminal, direction: up, index: 0}]`."),
        ));
    }
    let mut names = BTreeSet::new();
    let mut buffers = BTreeSet::new();
    for (i, channel) in rtt.channels.iter().enumerate() {
        if !names.insert(channel.name.as_str()) {
            return Err(refuse(
                format!("debuggers.{name}.rtt.channels[{i}].name"),
                format!("Two RTT channels are named `{}`.", channel.name),
            ));
        }
        if channel.format == RttFormat::Defmt && channel.direction == RttDirection::Down {
            return Err(refuse(
                format!("debuggers.{name}.rtt.channels[{i}].format"),
                "Only an up channel carries defmt frames; a down channel takes the agent's bytes as they are.",
            ));
        }
        if !buffers.insert((channel.direction == RttDirection::Up, channel.index)) {
            return Err(refuse(
                format!("debuggers.{name}.rtt.channels[{i}].index"),
                "Two RTT channels name the same buffer; one session could not tell whose bytes \
                 are whose.",
            ));
        }
    }
    Ok(())
}
