//! Every plan in `tests/plans` is parsed as the reactor's loader would.
//!
//! Invalid files declare `# expect: <error_type> <field>` on their first line; each was
//! checked against the reference's `test-reactor --json` (which reports `field`, unlike
//! `check-plan`). Files whose second line starts `# REFERENCE:` note where the reference
//! refuses the same fault at a later stage. Valid files load in the reference's
//! `check-plan` too.

use std::fs;
use std::path::{Path, PathBuf};

use ahil_config::plan::{Step, parse_plan};

fn dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plans")
        .join(kind)
}

fn files(kind: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir(kind))
        .expect("plan corpus dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "json"))
        .collect();
    v.sort();
    v
}

fn header(raw: &[u8]) -> String {
    let end = raw.iter().position(|b| *b == b'\n').unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

fn name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn every_invalid_plan_is_refused_with_the_error_type_and_field_the_reference_gives() {
    let files = files("invalid");
    assert!(files.len() >= 30, "only {} invalid plans", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let raw = fs::read(file).expect("read corpus file");
        let head = header(&raw);
        let mut parts = head
            .strip_prefix("# expect: ")
            .expect("expect header")
            .split_whitespace();
        let want_type = parts.next().expect("error_type");
        let want_field = parts.next().expect("field");
        match parse_plan(&raw) {
            Ok(_) => failures.push(format!("{}: loaded", name(file))),
            Err(e) => {
                let field = e.field().unwrap_or("-");
                if e.error_type() != want_type || field != want_field {
                    failures.push(format!(
                        "{}: got {} {field} ({})",
                        name(file),
                        e.error_type(),
                        e.summary()
                    ));
                }
                if e.remediation().is_empty() {
                    failures.push(format!("{}: no remediation", name(file)));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_valid_plan_loads_and_keeps_its_step_count() {
    let files = files("valid");
    assert!(files.len() >= 5, "only {} valid plans", files.len());
    for file in &files {
        let raw = fs::read(file).expect("read corpus file");
        let plan = parse_plan(&raw)
            .unwrap_or_else(|e| panic!("{}: {} {:?}", name(file), e.summary(), e.details()));
        assert!(!plan.steps.is_empty(), "{}", name(file));
    }
}

#[test]
fn the_spec_example_becomes_the_typed_steps_it_describes() {
    use ahil_config::plan::{
        CanComparator, Location, Matcher, Range, RouteKey, SymbolComparator, TextComparator,
    };
    let raw = fs::read(dir("valid").join("01-spec-example-v5.yaml")).expect("read");
    let plan = parse_plan(&raw).expect("the spec example loads");
    assert_eq!(plan.version, 5);
    assert_eq!(plan.name.as_deref(), Some("capture-state"));
    assert_eq!(plan.steps.len(), 11);
    let route = plan.steps[0].route().expect("flash names its debugger");
    assert_eq!((route.key, route.name.as_str()), (RouteKey::Device, "dut"));
    assert!(matches!(
        &plan.steps[3],
        Step::UartRead { comparator: Some(TextComparator { matcher: Matcher::Pattern { range: Some(Range { min, max }), .. } }), timeout_s: Some(t), .. }
            if (*min, *max, *t) == (20.0, 30.0, 5.0)
    ));
    assert!(matches!(
        &plan.steps[5],
        Step::RunUntilBreakpoint { location: Location::Symbol(s), .. } if s == "capture_done"
    ));
    assert!(matches!(
        &plan.steps[6],
        Step::CanRead {
            comparator: Some(CanComparator {
                id: 0x201,
                id_mask: None,
                extended: false,
                ..
            }),
            max_frames: Some(64),
            ..
        }
    ));
    assert!(matches!(
        &plan.steps[7],
        Step::ReadSymbol {
            size_bytes: Some(4),
            comparator: Some(SymbolComparator::Equals {
                value: 5,
                mask: Some(0x0f),
                signed: false
            }),
            ..
        }
    ));
    let Step::Repeat {
        count,
        duration_s,
        steps,
    } = &plan.steps[10]
    else {
        panic!("the last step is a repeat");
    };
    assert_eq!(
        (*count, *duration_s, steps.len()),
        (Some(10), Some(300.0), 2)
    );
}

#[test]
fn version_two_aliases_and_an_omitted_debugger_are_kept_as_written() {
    use ahil_config::plan::{ResetMode, RouteKey, UartMatch};
    let raw = fs::read(dir("valid").join("03-aliases-v2.yaml")).expect("read");
    let plan = parse_plan(&raw).expect("loads");
    assert!(matches!(
        &plan.steps[0],
        Step::Flash {
            route: None,
            reset_after_flash: true,
            ..
        }
    ));
    assert!(matches!(
        &plan.steps[1],
        Step::Reset {
            mode: ResetMode::Halt,
            ..
        }
    ));
    assert_eq!(plan.steps[2].route().map(|r| r.key), Some(RouteKey::PortId));
    assert!(matches!(
        &plan.steps[3],
        Step::UartExpect {
            matcher: UartMatch::Pattern(_),
            ..
        }
    ));
    assert!(matches!(
        &plan.steps[6],
        Step::CanSend {
            frame_id: 0x123,
            ..
        }
    ));
    assert!(matches!(
        &plan.steps[7],
        Step::CanSend { frame_id: 4660, .. }
    ));
    assert!(matches!(
        &plan.steps[8],
        Step::CanRead {
            comparator: None,
            max_frames: Some(8),
            ..
        }
    ));
}
