use super::*;

const LIMIT: usize = 1024 * 1024;

fn initialized() -> Lifecycle {
    Lifecycle {
        initialize_seen: true,
    }
}

/// The answer the screen writes for `line`, parsed.
fn answer_to(line: &[u8]) -> Value {
    match screen(line, &mut initialized(), LIMIT) {
        Verdict::Answer(bytes) => {
            assert_eq!(bytes.last(), Some(&b'\n'), "one line");
            serde_json::from_slice(&bytes).expect("the answer is JSON")
        }
        other => panic!(
            "{} was not answered: {other:?}",
            String::from_utf8_lossy(line)
        ),
    }
}

#[test]
fn a_number_too_large_for_a_float_becomes_the_marker() {
    let line = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"wait_s":1e400,"label":"1e400"}}}"#;
    let Verdict::Forward(Some(fixed)) = screen(line, &mut initialized(), LIMIT) else {
        panic!("the line is rewritten and passed on");
    };
    let value: Value = serde_json::from_slice(&fixed).expect("now parses");
    let arguments = &value["params"]["arguments"];
    assert_eq!(arguments["wait_s"], NON_FINITE_MARKER);
    assert_eq!(arguments["label"], "1e400", "strings are left alone");
}

#[test]
fn an_escaped_quote_does_not_end_a_string() {
    let line = br#"{"s":"x\"1e999","n":-1e999}"#;
    let tokens = scan(line).expect("shallow");
    let fixed = rewrite(line, &tokens.non_finite).expect("rewritten");
    let value: Value = serde_json::from_slice(&fixed).expect("parses");
    assert_eq!(value["s"], "x\"1e999");
    assert_eq!(value["n"], NON_FINITE_MARKER);
}

#[test]
fn a_well_formed_request_is_passed_on_untouched() {
    let line = br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"x":1.5e10}}"#;
    assert_eq!(
        screen(line, &mut initialized(), LIMIT),
        Verdict::Forward(None)
    );
}

#[test]
fn unparsable_lines_get_a_parse_error_with_a_null_id() {
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    for line in [
        b"{not json".to_vec(),
        br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}"#.to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}".to_vec(),
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"} trailing"#.to_vec(),
        deep.into_bytes(),
    ] {
        let answer = answer_to(&line);
        assert_eq!(answer["id"], Value::Null, "{answer}");
        assert_eq!(answer["error"]["code"], PARSE_ERROR, "{answer}");
    }
}

#[test]
fn a_line_of_more_values_than_the_cap_is_a_parse_error_and_one_at_the_cap_passes() {
    let list = |n: usize| {
        let items = vec!["1"; n].join(",");
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":[{items}]}}}}"#)
    };
    // The envelope counts two openers and three commas; the list its opener and n - 1 commas.
    let at_cap = list(MAX_VALUES - 5);
    assert_eq!(
        screen(at_cap.as_bytes(), &mut initialized(), LIMIT),
        Verdict::Forward(None)
    );
    let answer = answer_to(list(MAX_VALUES - 4).as_bytes());
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], PARSE_ERROR);
    assert_eq!(answer["error"]["data"]["max_values"], MAX_VALUES);
}

#[test]
fn nesting_up_to_the_cap_is_not_a_parse_error() {
    let inner = format!("{}{}", "[".repeat(MAX_DEPTH - 2), "]".repeat(MAX_DEPTH - 2));
    let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":{inner}}}}}"#);
    assert_eq!(
        screen(line.as_bytes(), &mut initialized(), LIMIT),
        Verdict::Forward(None)
    );
}

#[test]
fn an_invalid_request_is_refused_with_its_id() {
    for (line, id) in [
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1]}"#,
            json!(7),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s","method":"ping","params":"x"}"#,
            json!("s"),
        ),
        (r#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#, json!(8)),
        (r#"{"id":9,"method":"ping"}"#, json!(9)),
        (r#"{"jsonrpc":"2.0","id":10,"method":5}"#, json!(10)),
        (r#"{"jsonrpc":"2.0","id":11}"#, json!(11)),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":"ping","result":{}}"#,
            json!(12),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
            Value::Null,
        ),
        ("5", Value::Null),
        ("[]", Value::Null),
    ] {
        let answer = answer_to(line.as_bytes());
        assert_eq!(answer["id"], id, "{line}: {answer}");
        assert_eq!(answer["error"]["code"], INVALID_REQUEST, "{line}: {answer}");
    }
}

#[test]
fn a_known_method_whose_params_do_not_fit_is_refused_with_its_id() {
    for line in [
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}"#,
    ] {
        let answer = answer_to(line.as_bytes());
        assert_eq!(answer["id"], 3, "{line}: {answer}");
        assert_eq!(answer["error"]["code"], INVALID_PARAMS, "{line}: {answer}");
    }
}

#[test]
fn an_initialize_whose_params_do_not_fit_does_not_open_the_session() {
    let mut lifecycle = Lifecycle::default();
    let bad = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    assert!(matches!(
        screen(bad, &mut lifecycle, LIMIT),
        Verdict::Answer(_)
    ));
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert!(matches!(
        screen(note, &mut lifecycle, LIMIT),
        Verdict::Drop(_)
    ));
}

#[test]
fn an_over_long_number_literal_is_refused_with_the_id() {
    let digits = "1".repeat(MAX_NUMBER_CHARS + 1);
    let line = format!(r#"{{"jsonrpc":"2.0","id":4,"method":"ping","params":{{"n":{digits}}}}}"#);
    let answer = answer_to(line.as_bytes());
    assert_eq!(answer["id"], 4);
    assert_eq!(
        answer["error"]["data"]["max_number_chars"],
        MAX_NUMBER_CHARS
    );
}

#[test]
fn a_batch_is_refused_request_by_request_and_its_notifications_are_not_answered() {
    let line = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},7]"#;
    let answer = answer_to(line);
    let answers = answer.as_array().expect("a batch is answered by an array");
    assert_eq!(answers.len(), 2, "{answer}");
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[1]["id"], Value::Null);
    assert!(
        answers
            .iter()
            .all(|a| a["error"]["code"] == INVALID_REQUEST)
    );
}

#[test]
fn a_malformed_notification_is_not_answered() {
    let line = br#"{"jsonrpc":"2.0","id":null,"error":5}"#;
    assert!(matches!(
        screen(line, &mut initialized(), LIMIT),
        Verdict::Drop(_)
    ));
}

#[test]
fn a_notification_before_initialize_does_not_reach_rmcp() {
    let mut lifecycle = Lifecycle::default();
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert!(matches!(
        screen(note, &mut lifecycle, LIMIT),
        Verdict::Drop(_)
    ));
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    assert_eq!(screen(init, &mut lifecycle, LIMIT), Verdict::Forward(None));
    assert_eq!(screen(note, &mut lifecycle, LIMIT), Verdict::Forward(None));
}

#[test]
fn the_id_of_an_over_long_line_is_read_from_its_start() {
    assert_eq!(
        id_in_prefix(br#" {"jsonrpc":"2.0","params":{"a":[1,"}"]},"id":"big","pad":"xxx"#),
        json!("big")
    );
    assert_eq!(id_in_prefix(br#"{"id":42,"pad":"x"#), json!(42));
    assert_eq!(id_in_prefix(br#"{"params":{"pad":"xxxxx"#), Value::Null);
    assert_eq!(
        id_in_prefix(br#"{"id":4"#),
        Value::Null,
        "a cut id is not read"
    );
    assert_eq!(id_in_prefix(b"[1,2"), Value::Null);
}
