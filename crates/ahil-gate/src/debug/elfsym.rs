//! The ELF symbol table as a second source of a symbol's address and size: when gdb knows an
//! address but no type (an image built or stripped without DWARF), `sizeof` fails there, and the
//! symbol table still says how many bytes the linker gave the object.

use object::{Object, ObjectSymbol, SymbolSection};

/// Why the symbol table did not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// No defined symbol of that name.
    NotFound,
    /// Defined, but every definition has size zero (a label, not an object).
    NoSize,
    /// Defined more than once with different addresses or sizes (static symbols in two files).
    Ambiguous,
    /// Not an ELF this reader can parse.
    Unreadable(String),
}

impl Miss {
    /// The `symbol_table_lookup` reason results carry.
    pub fn reason(&self) -> &str {
        match self {
            Self::NotFound => "not_found",
            Self::NoSize => "no_size",
            Self::Ambiguous => "ambiguous",
            Self::Unreadable(_) => "unreadable",
        }
    }
}

/// The `(address, size)` of the defined symbol `name`, matched exactly.
pub fn lookup(elf: &[u8], name: &str) -> Result<(u64, u64), Miss> {
    let file = object::File::parse(elf).map_err(|e| Miss::Unreadable(e.to_string()))?;
    if file.format() != object::BinaryFormat::Elf {
        return Err(Miss::Unreadable("not an ELF file".into()));
    }
    let mut sized: Vec<(u64, u64)> = Vec::new();
    let mut defined = false;
    for symbol in file.symbols() {
        if symbol.name_bytes().ok() != Some(name.as_bytes())
            || matches!(symbol.section(), SymbolSection::Undefined)
        {
            continue;
        }
        defined = true;
        let entry = (symbol.address(), symbol.size());
        if entry.1 > 0 && !sized.contains(&entry) {
            sized.push(entry);
        }
    }
    match sized.as_slice() {
        [one] => Ok(*one),
        [] if defined => Err(Miss::NoSize),
        [] => Err(Miss::NotFound),
        _ => Err(Miss::Ambiguous),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn firmware(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../firmware/build")
            .join(name);
        std::fs::read(path).expect("committed firmware")
    }

    #[test]
    fn a_stripped_image_still_names_the_address_and_size_of_its_globals() {
        let full = firmware("ahil-fw-v1.elf");
        let stripped = firmware("ahil-fw-v1-nodebug.elf");
        for name in ["counter", "g_u32", "g_array", "systick_count"] {
            let answer = lookup(&stripped, name).expect(name);
            assert_eq!(answer, lookup(&full, name).expect(name), "{name}");
            assert!(
                answer.1 > 0 && answer.0 >= 0x2000_0000,
                "{name}: {answer:?}"
            );
        }
    }

    #[test]
    fn misses_are_told_apart() {
        let elf = firmware("ahil-fw-v1-nodebug.elf");
        assert_eq!(lookup(&elf, "no_such_symbol"), Err(Miss::NotFound));
        assert_eq!(lookup(&elf, "_ebss"), Err(Miss::NoSize), "a linker label");
        assert_eq!(
            lookup(b"not an elf", "counter").map_err(|m| m.reason().to_owned()),
            Err("unreadable".into())
        );
    }
}
