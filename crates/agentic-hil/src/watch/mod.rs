//! `agentic-hil watch`: a live, read-only view of this workspace's bench, redrawn every 500 ms
//! (`--interval-ms`).
//! ratatui keeps the previous frame and sends only the cells that changed, so the picture does not
//! flicker, even over ssh. `--once` prints one frame as plain text instead.

mod render;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use ahil_config::Environment;
use ahil_gate::audit::Sink;
use ahil_gate::observe::{Action, BenchView, observe};
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend, TestBackend};
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{execute, terminal};

/// Actions kept on screen. The audit keeps only the last report and the last failure, so the
/// history beyond those two is what this watcher saw come and go.
const HISTORY: usize = 20;

pub struct Options {
    pub once: bool,
    pub width: Option<u16>,
    pub height: Option<u16>,
    pub refresh: Duration,
}

/// Adds newly seen actions to `history`, newest first, without repeats.
fn remember(history: &mut Vec<Action>, seen: &[Action]) {
    for action in seen {
        if !history.contains(action) {
            history.push(action.clone());
        }
    }
    history.sort_by(|a, b| b.finished_at.cmp(&a.finished_at));
    history.truncate(HISTORY);
}

/// A buffer's text, one line per row, trailing blanks cut.
pub fn buffer_text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

// Out of line: see `mcp::serve`.
#[inline(never)]
pub fn run(workspace: &Path, env: &Environment, options: &Options) -> anyhow::Result<ExitCode> {
    if options.once {
        let (cols, rows) = terminal::size().unwrap_or((100, 30));
        let width = options.width.unwrap_or(cols).clamp(40, 500);
        let height = options.height.unwrap_or(rows).clamp(10, 500);
        let mut term = Terminal::new(TestBackend::new(width, height))?;
        redraw(&mut term, workspace, env, &mut Vec::new())?;
        let mut out = std::io::stdout().lock();
        out.write_all(buffer_text(term.backend().buffer()).as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    live(workspace, env, options.refresh)
}

/// One pass: the bench as it is now, its new actions added to `history`, drawn on `term`.
fn redraw<B: Backend>(
    term: &mut Terminal<B>,
    workspace: &Path,
    env: &Environment,
    history: &mut Vec<Action>,
) -> std::io::Result<()> {
    let view = observed(workspace, env);
    remember(history, &view.actions);
    let at = ahil_config::time::now_millis();
    term.draw(|f| {
        render::draw(
            f,
            &render::Screen {
                view: &view,
                actions: history,
                at: &at,
            },
        );
    })?;
    Ok(())
}

/// The bench as the screen may show it: every string passed through the one output step, so a
/// session log's device line or a report's summary shows no secret and no private directory.
fn observed(workspace: &Path, env: &Environment) -> BenchView {
    let sink = Sink::for_environment(workspace, env);
    let sink = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => sink.with_config(&loaded),
        Err(_) => sink,
    };
    scrubbed(&observe(workspace, env), &sink)
}

/// Every string of the view through the sink, by way of its JSON form: a field added to the view
/// is scrubbed without being named here. A view that does not come back whole is not shown.
fn scrubbed(view: &BenchView, sink: &Sink) -> BenchView {
    serde_json::to_value(view)
        .and_then(|value| serde_json::from_value(sink.scrub(&value).into_value()))
        .unwrap_or_else(|_| BenchView {
            problem: Some("The bench view could not be scrubbed, so it is not shown.".into()),
            ..BenchView::default()
        })
}

/// Puts the terminal back however the loop ends (error or panic included).
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            std::io::stdout(),
            terminal::LeaveAlternateScreen,
            ratatui::crossterm::cursor::Show
        );
    }
}

fn live(workspace: &Path, env: &Environment, refresh: Duration) -> anyhow::Result<ExitCode> {
    terminal::enable_raw_mode()?;
    let _restore = Restore;
    execute!(
        std::io::stdout(),
        terminal::EnterAlternateScreen,
        ratatui::crossterm::cursor::Hide
    )?;
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut history = Vec::new();
    loop {
        redraw(&mut term, workspace, env, &mut history)?;
        if event::poll(refresh)? {
            match event::read()? {
                Event::Key(key) if key.kind == KeyEventKind::Press => {
                    let quit = matches!(key.code, KeyCode::Char('q') | KeyCode::Esc)
                        || (key.code == KeyCode::Char('c')
                            && key.modifiers.contains(KeyModifiers::CONTROL));
                    if quit {
                        return Ok(ExitCode::SUCCESS);
                    }
                }
                // A resize redraws everything at the new size on the next pass.
                Event::Resize(..) => term.autoresize()?,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(at: &str, tool: &str) -> Action {
        Action {
            finished_at: at.into(),
            tool: tool.into(),
            verdict: "ok".into(),
            summary: String::new(),
        }
    }

    #[test]
    fn the_screen_shows_no_secret_and_no_private_directory() {
        let sink = Sink::new(Some(Path::new("/home/u")));
        let mut view = BenchView::default();
        view.actions.push(Action {
            summary: "wrote /home/u/x with token=abc".into(),
            ..action("T1", "flash_firmware")
        });
        view.lease.state = Some("token=abc".into());
        view.sessions.push(ahil_gate::observe::Session {
            port_id: "uart0".into(),
            log: "/home/u/x.jsonl".into(),
            lines: vec!["password=hunter2".into()],
        });
        let view = scrubbed(&view, &sink);
        assert_eq!(view.actions[0].summary, "wrote ~/x with token=[redacted]");
        assert_eq!(view.lease.state.as_deref(), Some("token=[redacted]"));
        assert_eq!(view.sessions[0].log, "~/x.jsonl");
        assert_eq!(view.sessions[0].lines, ["password=[redacted]"]);
    }

    #[test]
    fn no_string_of_the_view_reaches_the_screen_unscrubbed() {
        use ahil_gate::observe::{Hold, Incident, Session};
        let planted = "token=abc in /home/u/x";
        let text = || planted.to_owned();
        let view = BenchView {
            workspace: text(),
            problem: Some(text()),
            holds: vec![Hold {
                resource: text(),
                held: Some(true),
                holder: Some(text()),
                label: Some(text()),
                since: Some(text()),
            }],
            lease: ahil_gate::observe::Lease {
                owner_active: Some(true),
                state: Some(text()),
                owner: Some(text()),
                incident: Some(Incident {
                    state: text(),
                    quarantine_id: Some(text()),
                    reasons: vec![text()],
                }),
            },
            actions: vec![Action {
                finished_at: text(),
                tool: text(),
                verdict: text(),
                summary: text(),
            }],
            sessions: vec![Session {
                port_id: text(),
                log: text(),
                lines: vec![text()],
            }],
            places: vec![text()],
        };
        let shown = serde_json::to_string(&scrubbed(&view, &Sink::new(Some(Path::new("/home/u")))))
            .unwrap();
        assert!(
            !shown.contains("abc") && !shown.contains("/home/u"),
            "{shown}"
        );
        assert_eq!(
            shown.matches("token=[redacted] in ~/x").count(),
            19,
            "{shown}"
        );
    }

    #[test]
    fn the_history_keeps_each_action_once_newest_first() {
        let mut history = Vec::new();
        remember(&mut history, &[action("T1", "reset_target")]);
        remember(
            &mut history,
            &[action("T2", "flash_firmware"), action("T1", "reset_target")],
        );
        let tools: Vec<&str> = history.iter().map(|a| a.tool.as_str()).collect();
        assert_eq!(tools, ["flash_firmware", "reset_target"]);
    }
}
