use super::*;
use proptest::prelude::*;

#[test]
fn a_download_result_record_keeps_its_token_and_fields() {
    let record = parse_line(
        r#"104^done,address="0x08000270",load-size="792",transferred-bits="6336",write-rate="264""#,
    )
    .expect("a valid record");
    let Record::Result { token, class, .. } = &record else {
        panic!("not a result record: {record:?}");
    };
    assert_eq!(*token, Some(104));
    assert_eq!(*class, ResultClass::Done);
    assert_eq!(record.field("load-size"), Some("792"));
}

#[test]
fn a_stopped_record_nests_tuples_and_lists() {
    let line = r#"*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x080001bc",func="on_tick",args=[{name="n",value="1"}],file="fw.c",line="84",arch="armv7e-m"},thread-id="1",stopped-threads="all""#;
    let record = parse_line(line).expect("a valid record");
    let Record::Async {
        kind,
        class,
        results,
        ..
    } = &record
    else {
        panic!("not async: {record:?}");
    };
    assert_eq!(*kind, AsyncKind::Exec);
    assert_eq!(class, "stopped");
    let frame = find(results, "frame").expect("a frame");
    assert_eq!(frame.get("func").and_then(Value::as_str), Some("on_tick"));
    let args = frame.get("args").expect("args").items();
    assert_eq!(args.len(), 1);
    assert_eq!(args[0].get("value").and_then(Value::as_str), Some("1"));
}

#[test]
fn a_list_of_results_keeps_every_frame() {
    let line = r#"118^done,stack=[frame={level="0",func="on_tick"},frame={level="1",func="main"}]"#;
    let record = parse_line(line).expect("a valid record");
    let stack = find(record.results(), "stack").expect("a stack");
    let funcs: Vec<_> = stack
        .items()
        .iter()
        .filter_map(|frame| frame.get("func").and_then(Value::as_str))
        .collect();
    assert_eq!(funcs, ["on_tick", "main"]);
}

#[test]
fn stream_records_decode_c_escapes_and_octal_bytes() {
    let record =
        parse_line(r#"@"VM status: paused\r\n\"x\"\\ \101\302\265""#).expect("a valid record");
    assert_eq!(
        record,
        Record::Stream {
            kind: StreamKind::Target,
            text: "VM status: paused\r\n\"x\"\\ Aµ".to_owned()
        }
    );
}

#[test]
fn the_prompt_and_empty_collections_parse() {
    assert_eq!(parse_line("(gdb) "), Ok(Record::Prompt));
    let record = parse_line(r#"=thread-group-added,id="i1",empty={},none=[]"#).expect("valid");
    assert_eq!(
        find(record.results(), "empty"),
        Some(&Value::Tuple(Vec::new()))
    );
    assert_eq!(
        find(record.results(), "none"),
        Some(&Value::List(Vec::new()))
    );
}

#[test]
fn an_error_record_carries_its_message() {
    let record = parse_line(
        r#"7^error,msg="Remote communication error.  Target disconnected.: Broken pipe.""#,
    )
    .expect("valid");
    let Record::Result { class, .. } = &record else {
        panic!("not a result");
    };
    assert_eq!(*class, ResultClass::Error);
    assert!(
        record
            .field("msg")
            .is_some_and(|m| m.contains("Target disconnected"))
    );
}

#[test]
fn malformed_lines_are_refused_with_an_offset() {
    for line in [
        "",
        "^",
        "^maybe",
        "12~\"token on a stream\"",
        "~\"unterminated",
        "*stopped,frame={addr=\"1\"",
        "^done,=\"x\"",
        "^done,a=\"1\" trailing",
        "Remote debugging using /tmp/gdb.sock",
        "99999999999999999999999^done",
    ] {
        assert!(parse_line(line).is_err(), "accepted {line:?}");
    }
}

#[test]
fn nesting_deeper_than_the_bound_is_refused_not_overflowed() {
    let deep = format!("^done,v={}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse_line(&deep).is_err());
}

#[test]
fn a_quoted_argument_stays_on_the_commands_line_whatever_it_holds() {
    // A raw line break would end the MI command and start another one.
    assert_eq!(quote("a\nb\r\tc\"d\\e é"), "\"a\\nb\\r\\tc\\\"d\\\\e é\"");
}

#[test]
fn quoting_round_trips_through_the_parser() {
    let text = "a \"path\" with \\ and\nnewline";
    let line = format!("~{}", quote(text));
    assert_eq!(
        parse_line(&line),
        Ok(Record::Stream {
            kind: StreamKind::Console,
            text: text.to_owned()
        })
    );
}

proptest! {
    #[test]
    fn the_parser_never_panics_on_any_line(line in ".{0,200}") {
        let _ = parse_line(&line);
    }

    #[test]
    fn the_parser_never_panics_on_mi_shaped_noise(
        line in r#"[0-9]{0,3}[\^*+=~@&][a-z,={}\[\]"\\0-7-]{0,120}"#
    ) {
        let _ = parse_line(&line);
    }

    #[test]
    fn a_real_record_cut_anywhere_never_panics(cut in 0usize..400) {
        let records = [
            r#"*stopped,reason="breakpoint-hit",disp="keep",bkptno="1",frame={addr="0x08000120",func="on_tick",args=[{name="n",value="3"}],file="src/fw.c",line="42"},thread-id="1",stopped-threads="all""#,
            r#"123^done,bkpt={number="1",type="breakpoint",addr="0x08000120",func="on_tick",times="0",original-location="on_tick"}"#,
            r#"^error,msg="No symbol \"nope\" in current context.""#,
            r#"~"Remote debugging using /tmp/gdb.sock\n""#,
        ];
        for record in records {
            let end = cut.min(record.len());
            if record.is_char_boundary(end) {
                let _ = parse_line(&record[..end]);
            }
        }
    }

    #[test]
    fn any_quoted_text_parses_back_to_itself(text in "\\PC{0,80}") {
        let line = format!("&{}", quote(&text));
        prop_assert_eq!(parse_line(&line), Ok(Record::Stream { kind: StreamKind::Log, text }));
    }
}

#[test]
fn a_memory_read_answer_gives_its_blocks_bytes_in_order_and_refuses_odd_hex() {
    let answer = |line: &str| parse_line(line).expect("valid record").results().to_vec();
    let read = answer(
        r#"^done,memory=[{begin="0x20000000",offset="0x0",end="0x20000002",contents="beef"},{begin="0x20000002",offset="0x0",end="0x20000003",contents="0A"}]"#,
    );
    assert_eq!(memory_bytes(&read), Some(vec![0xbe, 0xef, 0x0a]));
    let odd = answer(r#"^done,memory=[{begin="0x0",offset="0x0",end="0x1",contents="abc"}]"#);
    assert_eq!(memory_bytes(&odd), None);
    assert_eq!(memory_bytes(&answer("^done")), None);
}
