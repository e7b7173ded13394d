//! A block of lines we own inside a text file someone else owns, found by its two marker lines.
//! Everything outside the markers is kept byte for byte.

#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Absent,
    /// Byte range of the whole block, marker lines and their line ends included.
    At(std::ops::Range<usize>),
    /// A start without an end, an end without a start, or two blocks: we cannot tell what is ours.
    Damaged,
}

pub struct Markers {
    pub start: &'static str,
    pub end: &'static str,
}

impl Markers {
    pub fn find(&self, text: &str) -> Found {
        let starts = line_offsets(text, self.start);
        let ends = line_offsets(text, self.end);
        match (starts.as_slice(), ends.as_slice()) {
            ([], []) => Found::Absent,
            ([start], [end]) if start < end => {
                let after_end = text[*end..]
                    .find('\n')
                    .map_or(text.len(), |at| end + at + 1);
                Found::At(*start..after_end)
            }
            _ => Found::Damaged,
        }
    }

    pub fn block(&self, body: &str) -> String {
        let mut block = format!("{}\n{body}", self.start);
        if !block.ends_with('\n') {
            block.push('\n');
        }
        block.push_str(self.end);
        block.push('\n');
        block
    }

    /// `text` with our block set to `body`: replaced where it was, else appended after a blank line.
    /// `None` when the markers are damaged.
    pub fn upsert(&self, text: &str, body: &str) -> Option<String> {
        let block = self.block(body);
        match self.find(text) {
            Found::Damaged => None,
            Found::At(range) => {
                let mut out = text.to_owned();
                out.replace_range(range, &block);
                Some(out)
            }
            Found::Absent => {
                let mut out = text.to_owned();
                if !out.is_empty() {
                    if !out.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push('\n');
                }
                out.push_str(&block);
                Some(out)
            }
        }
    }

    /// `text` without our block (and the blank line `upsert` put before it), or `None` if absent or
    /// damaged.
    pub fn remove(&self, text: &str) -> Option<String> {
        let Found::At(range) = self.find(text) else {
            return None;
        };
        let mut start = range.start;
        if text[..start].ends_with("\n\n") {
            start -= 1;
        }
        let mut out = text[..start].to_owned();
        out.push_str(&text[range.end..]);
        Some(out)
    }
}

/// Offsets of the lines equal to `marker` (surrounding whitespace ignored).
fn line_offsets(text: &str, marker: &str) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim() == marker {
            offsets.push(at);
        }
        at += line.len();
    }
    offsets
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Markers = Markers {
        start: "# >>> ours >>>",
        end: "# <<< ours <<<",
    };

    #[test]
    fn upsert_then_remove_gives_back_the_operators_text() {
        let original = "model = \"x\"\n\n[other]\nkey = 1\n";
        let with = M.upsert(original, "a = 1\n").expect("upsert");
        assert_eq!(
            with,
            format!("{original}\n# >>> ours >>>\na = 1\n# <<< ours <<<\n")
        );
        let again = M.upsert(&with, "a = 2\n").expect("replace");
        assert!(again.contains("a = 2") && !again.contains("a = 1"));
        assert_eq!(M.remove(&again).expect("remove"), original);
    }

    #[test]
    fn a_start_marker_without_its_end_is_damaged_and_left_alone() {
        let text = "# >>> ours >>>\na = 1\n";
        assert_eq!(M.find(text), Found::Damaged);
        assert_eq!(M.upsert(text, "a = 2\n"), None);
        assert_eq!(M.remove(text), None);
    }
}
