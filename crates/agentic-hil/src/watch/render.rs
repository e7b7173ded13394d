//! One frame of the bench view, from a [`BenchView`] and the actions seen so far. Pure: the same
//! inputs draw the same cells, which is what the snapshot tests pin.

use ahil_gate::observe::{Action, BenchView, Hold};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Wrap};

/// Everything one frame shows.
pub struct Screen<'a> {
    pub view: &'a BenchView,
    /// Newest first.
    pub actions: &'a [Action],
    /// The wall-clock time of the observation, as shown in the title.
    pub at: &'a str,
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// The last `HH:MM:SS` of an ISO timestamp, or it whole when it has no time part.
fn clock(stamp: &str) -> &str {
    stamp
        .split_once('T')
        .map_or(stamp, |(_, time)| time.get(..8).unwrap_or(time))
}

pub fn draw(frame: &mut Frame, screen: &Screen) {
    let view = screen.view;
    let area = frame.area();
    let title = Line::from(vec![
        Span::styled("agentic-hil watch", bold()),
        Span::raw(format!(
            "  {}  {}  (q quits)",
            view.workspace,
            clock(screen.at)
        )),
    ]);
    if let Some(problem) = &view.problem {
        let text = vec![title, Line::raw(""), Line::raw(problem.clone())];
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), area);
        return;
    }
    let session_rows: u16 = view
        .sessions
        .iter()
        .map(|s| {
            u16::try_from(s.lines.len())
                .unwrap_or(u16::MAX)
                .saturating_add(2)
        })
        .sum::<u16>()
        .max(3);
    let device_rows = u16::try_from(view.holds.len()).unwrap_or(u16::MAX).max(1);
    let [head, devices, lease, actions, sessions] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(device_rows + 3),
        Constraint::Length(4 + u16::try_from(view.places.len()).unwrap_or(u16::MAX)),
        Constraint::Min(4),
        Constraint::Length(session_rows),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(title), head);
    frame.render_widget(devices_table(&view.holds), devices);
    frame.render_widget(lease_panel(view), lease);
    frame.render_widget(actions_table(screen.actions), actions);
    draw_sessions(frame, view, sessions);
}

fn devices_table(holds: &[Hold]) -> Table<'static> {
    let rows: Vec<Row> = holds
        .iter()
        .map(|h| {
            let (state, style) = match h.held {
                Some(true) => (
                    "HELD",
                    Style::default()
                        .fg(Color::Yellow)
                        .add_modifier(Modifier::BOLD),
                ),
                Some(false) => ("free", Style::default().fg(Color::Green)),
                None => ("?", Style::default()),
            };
            Row::new(vec![
                h.resource.clone(),
                state.to_owned(),
                h.holder.clone().unwrap_or_default(),
                h.label.clone().unwrap_or_default(),
                h.since.as_deref().map(clock).unwrap_or_default().to_owned(),
            ])
            .style(style)
        })
        .collect();
    titled_table(
        rows,
        Row::new(vec!["(no devices configured)".to_owned()]),
        [
            Constraint::Fill(3),
            Constraint::Length(5),
            Constraint::Length(22),
            Constraint::Fill(2),
            Constraint::Length(8),
        ],
        ["device", "state", "holder", "label", "since"],
        " Devices ",
    )
}

/// A bordered table under `title` with a bold `header`; `empty` stands alone when there are no
/// rows, so an empty panel says why.
fn titled_table<const N: usize>(
    rows: Vec<Row<'static>>,
    empty: Row<'static>,
    widths: [Constraint; N],
    header: [&'static str; N],
    title: &'static str,
) -> Table<'static> {
    let rows = if rows.is_empty() { vec![empty] } else { rows };
    Table::new(rows, widths)
        .header(Row::new(header).style(bold()))
        .block(Block::default().borders(Borders::ALL).title(title))
}

fn lease_panel(view: &BenchView) -> Paragraph<'static> {
    let lease = &view.lease;
    let owner = match (lease.owner_active, &lease.owner) {
        (Some(true), Some(owner)) => format!("held by {owner}"),
        (Some(true), None) => "held".to_owned(),
        (Some(false), _) => "no owner".to_owned(),
        (None, _) => "owner unknown".to_owned(),
    };
    let record = lease.state.as_deref().unwrap_or("no record");
    let first = Line::raw(format!("lease: {owner}; record: {record}"));
    let second = match &lease.incident {
        None => Line::styled("incident: none", Style::default().fg(Color::Green)),
        Some(incident) => Line::styled(
            format!(
                "INCIDENT {} {}: {}",
                incident.state,
                incident.quarantine_id.as_deref().unwrap_or(""),
                if incident.reasons.is_empty() {
                    "no reason recorded".to_owned()
                } else {
                    incident.reasons.join(", ")
                }
            ),
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        ),
    };
    let mut lines = vec![first, second];
    lines.extend(view.places.iter().map(|p| Line::raw(format!("place {p}"))));
    Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Lease "))
}

fn actions_table(actions: &[Action]) -> Table<'static> {
    let rows: Vec<Row> = actions
        .iter()
        .map(|a| {
            let style = if a.verdict == "ok" {
                Style::default().fg(Color::Green)
            } else {
                Style::default().fg(Color::Red)
            };
            Row::new(vec![
                clock(&a.finished_at).to_owned(),
                a.tool.clone(),
                a.verdict.clone(),
                a.summary.clone(),
            ])
            .style(style)
        })
        .collect();
    titled_table(
        rows,
        Row::new(vec![String::new(), "(no audited call yet)".to_owned()]),
        [
            Constraint::Length(8),
            Constraint::Length(22),
            Constraint::Length(26),
            Constraint::Fill(1),
        ],
        ["time", "tool", "verdict", "summary"],
        " Recent audited calls ",
    )
}

fn draw_sessions(frame: &mut Frame, view: &BenchView, area: ratatui::layout::Rect) {
    if view.sessions.is_empty() {
        let empty = Paragraph::new("(no open COM session)").block(
            Block::default()
                .borders(Borders::ALL)
                .title(" COM sessions "),
        );
        frame.render_widget(empty, area);
        return;
    }
    let constraints: Vec<Constraint> = view
        .sessions
        .iter()
        .map(|s| {
            Constraint::Length(
                u16::try_from(s.lines.len())
                    .unwrap_or(u16::MAX)
                    .saturating_add(2),
            )
        })
        .collect();
    let areas = Layout::vertical(constraints).split(area);
    for (session, slot) in view.sessions.iter().zip(areas.iter()) {
        let lines: Vec<Line> = session.lines.iter().map(|l| Line::raw(l.clone())).collect();
        let block = Block::default()
            .borders(Borders::ALL)
            .title(format!(" COM {} ({}) ", session.port_id, session.log));
        frame.render_widget(Paragraph::new(lines).block(block), *slot);
    }
}

#[cfg(test)]
mod tests {
    use ahil_gate::observe::{Incident, Lease, Session};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;

    /// The frame as text, one line per row, trailing blanks cut.
    fn rendered(screen: &Screen, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
        terminal.draw(|f| draw(f, screen)).expect("draw");
        super::super::buffer_text(terminal.backend().buffer())
    }

    /// Compares with `snapshots/<name>.txt`; `AHIL_UPDATE_GOLDEN=1` rewrites it.
    fn assert_snapshot(name: &str, text: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/watch/snapshots")
            .join(format!("{name}.txt"));
        if std::env::var_os("AHIL_UPDATE_GOLDEN").is_some() {
            std::fs::create_dir_all(path.parent().expect("dir")).expect("snapshot dir");
            std::fs::write(&path, text).expect("write snapshot");
            return;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
            panic!(
                "{} is missing; run with AHIL_UPDATE_GOLDEN=1",
                path.display()
            )
        });
        assert_eq!(text, expected, "the {name} frame changed");
    }

    /// `view` with `actions` at the fixed moment the snapshots show, against `snapshots/<name>.txt`.
    fn assert_frame(name: &str, view: &BenchView, actions: &[Action], width: u16, height: u16) {
        let screen = Screen {
            view,
            actions,
            at: "2026-11-30T10:15:03.000Z",
        };
        assert_snapshot(name, &rendered(&screen, width, height));
    }

    /// An action that finished two seconds before the frame's moment.
    fn action(tool: &str, verdict: &str, summary: &str) -> Action {
        Action {
            finished_at: "2026-11-30T10:14:58.001Z".into(),
            tool: tool.into(),
            verdict: verdict.into(),
            summary: summary.into(),
        }
    }

    fn hold(resource: &str, holder: Option<&str>) -> Hold {
        Hold {
            resource: resource.to_owned(),
            held: Some(holder.is_some()),
            holder: holder.map(str::to_owned),
            label: None,
            since: holder.map(|_| "2026-11-30T10:15:02.120Z".to_owned()),
        }
    }

    #[test]
    fn an_idle_bench_shows_free_devices_and_no_incident() {
        let view = BenchView {
            workspace: "board-fw".into(),
            holds: vec![hold("qemu:board", None), hold("com:sim-uart", None)],
            lease: Lease {
                owner_active: Some(false),
                state: Some("released".into()),
                ..Lease::default()
            },
            ..BenchView::default()
        };
        assert_frame("idle", &view, &[], 100, 20);
    }

    #[test]
    fn a_flash_in_progress_shows_the_held_debugger_and_the_uart_tail() {
        let view = BenchView {
            workspace: "board-fw".into(),
            holds: vec![
                hold("qemu:board", Some("mcp pid 4242")),
                hold("com:sim-uart", Some("mcp pid 4242")),
            ],
            lease: Lease {
                owner_active: Some(true),
                state: Some("active".into()),
                owner: Some("mcp pid 4242".into()),
                incident: None,
            },
            actions: Vec::new(),
            places: Vec::new(),
            sessions: vec![Session {
                port_id: "uart".into(),
                log: ".agentic-hil/logs/com-20261130T101500000Z-uart.jsonl".into(),
                lines: vec!["-- start".into(), "rx boot ok v1".into(), "tx ping".into()],
            }],
            problem: None,
        };
        let actions = [action("com_session_start", "ok", "COM session started.")];
        assert_frame("flashing", &view, &actions, 100, 24);
    }

    #[test]
    fn a_standing_incident_is_shown_with_its_quarantine_id_and_reasons() {
        let view = BenchView {
            workspace: "board-fw".into(),
            holds: vec![hold("qemu:board", None)],
            lease: Lease {
                owner_active: Some(false),
                state: Some("quarantined".into()),
                owner: None,
                incident: Some(Incident {
                    state: "quarantined".into(),
                    quarantine_id: Some("q-1f2e".into()),
                    reasons: vec!["audit_broken".into()],
                }),
            },
            ..BenchView::default()
        };
        let actions = [action(
            "flash_firmware",
            "audit_failed_after_action",
            "Flashed, but its report could not be written.",
        )];
        assert_frame("incident", &view, &actions, 100, 20);
    }

    #[test]
    fn without_a_configuration_the_frame_says_why() {
        let view = BenchView {
            workspace: "board-fw".into(),
            problem: Some("config_file_not_found: No configuration for this workspace.".into()),
            ..BenchView::default()
        };
        assert_frame("unconfigured", &view, &[], 80, 5);
    }
}
