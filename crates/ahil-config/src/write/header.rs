//! The comment block a person put at the top of the file, and the one line saying who changed it last.

use crate::model::Actor;

/// Start of the line every write leaves at the end of the header (at most one such line).
pub(crate) const CHANGED_BY: &str = "# Changed by ";

/// The leading comment lines of `text`, without an earlier change line and without trailing blanks.
pub(crate) fn leading_comments(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .lines()
        .take_while(|line| {
            let trimmed = line.trim();
            trimmed.is_empty() || trimmed.starts_with('#')
        })
        .filter(|line| !line.starts_with(CHANGED_BY))
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines
}

/// `# Changed by <who> via <route> at <time>; provenance below lists the keys.`
pub(crate) fn change_line(actor: Actor, via: &str, at: &str) -> String {
    let who = match actor {
        Actor::Agent => "an agent",
        Actor::Human => "a person",
        Actor::Cli => "a script",
    };
    // The route comes from our own code, but a comment must stay on one line whatever it holds.
    let via: String = via.chars().filter(|c| !c.is_control()).collect();
    format!("{CHANGED_BY}{who} via {via} at {at}; provenance below lists the keys.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_stops_at_the_first_key_and_drops_the_previous_change_line() {
        let text = "# Bench A\n# owned by ops\n# Changed by a person via cli:grant at x; y\n\nversion: 3\n# not header\n";
        assert_eq!(leading_comments(text), ["# Bench A", "# owned by ops"]);
        assert!(leading_comments("version: 3\n").is_empty());
    }

    #[test]
    fn the_change_line_names_the_actor_and_route_on_one_line() {
        let line = change_line(
            Actor::Agent,
            "mcp:project_config_set\n",
            "2026-01-01T00:00:00Z",
        );
        assert_eq!(
            line,
            "# Changed by an agent via mcp:project_config_set at 2026-01-01T00:00:00Z; provenance below lists the keys."
        );
    }
}
