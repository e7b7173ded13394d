//! What an RTT reader takes from the ELF the target runs: the control block's address
//! (`rtt.from_elf`, the `_SEGGER_RTT` symbol) and the defmt table. A session and a flash's capture
//! read the same ELF for both, so they answer alike.

use ahil_drivers::rtt::defmt::DefmtTable;
use ahil_drivers::rtt::link::Locate;
use serde_json::Value;

use super::defmt::Decoding;
use crate::ErrorType;
use crate::catalogue::ToolId;
use crate::debug::elfsym;
use crate::envelope::Outcome;

/// The symbol SEGGER's RTT code (and rtt-target, defmt-rtt) gives the control block.
pub const CONTROL_BLOCK_SYMBOL: &str = "_SEGGER_RTT";

/// The control block's address in `elf`, or the refusal that names what is missing.
pub fn control_block(tool: ToolId, elf: &[u8], source: &Value) -> Result<Locate, Box<Outcome>> {
    let found = elfsym::lookup(elf, CONTROL_BLOCK_SYMBOL)
        .ok()
        .and_then(|(address, _)| u32::try_from(address).ok());
    match found {
        Some(address) => Ok(Locate::At(address)),
        None => Err(Box::new(
            Outcome::refused(
                tool,
                ErrorType::RttControlBlockNotFound,
                format!(
                    "rtt.from_elf: the ELF {} defines no {CONTROL_BLOCK_SYMBOL} object, so the control block's address is not known.",
                    source["path"].as_str().unwrap_or("on record")
                ),
            )
            .with("symbol", CONTROL_BLOCK_SYMBOL)
            .with("elf", source.clone())
            .with_next_step(
                "Flash an ELF whose RTT control block is the symbol _SEGGER_RTT, or ask the operator to name control_block or scan in the rtt section.",
            )
            .not_contacted(),
        )),
    }
}

/// The defmt table of `elf`, or why there is none (that channel then reads raw).
pub fn decoding(elf: &[u8], source: Value) -> Result<Decoding, String> {
    match DefmtTable::from_elf(elf) {
        Ok(Some(table)) => Ok(Decoding::new(table, source)),
        Ok(None) => Err("The ELF has no .defmt section.".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}
