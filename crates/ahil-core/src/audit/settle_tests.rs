use super::unsettled_from;

/// `(text, the tail it holds back)`: an unfinished end that a whole-shape pass could still mask
/// is held from the first byte it would mask; the rest goes out.
const HELD: &[(&str, &str)] = &[
    ("id A", "A"),
    ("id AKIAIOSF", "AKIAIOSF"),
    ("id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("key=\"AKIA", "AKIA"),
    ("gh ghp_0123", "ghp_0123"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    ),
    ("scp bob:hun", "hun"),
    ("proxy=ci:p@ss@pro", "p@ss@pro"),
    ("fetch https://bob:hunter2@ex", "hunter2@ex"),
    ("fetch https://ghtoken", "ghtoken"),
    ("X-Auth: Bearer abc.d", "abc.d"),
    ("Authorization: dXNlcjp", "dXNlcjp"),
    ("authorization:\"dXNl", "dXNl"),
    ("Authorization:\tdXNlcjp", "dXNlcjp"),
    ("WIFI_PSK=hunt", "hunt"),
    ("unexpected token: '}'", "'}'"),
    ("password=hunt", "hunt"),
    ("{\"status\":\"ok\",\"token\":\"ab", "\"ab"),
    ("token: '}", "'}"),
];

/// Unfinished ends that no pass could mask whatever follows: they go out whole.
const SETTLED: &[&str] = &[
    "hello wor",
    "ld 12:3",
    "login:",
    "Password:",
    "root@board:~#",
    "0x20000000",
    "id AKX",
    "id AKIAfoo",
    "id AKIAIOSFODNN7EXAMPLEX",
    "ghz",
    "eyX",
    "see https://example.com/a",
    "the bearer",
    "(Bearer abc.def)",
    "Authorization: Bearer ",
    "Authorization: Bearer abc ok",
    "prompt>",
    "{\"status\":\"ok\",\"token\":\"abc\"}",
    "token: '}',",
    "password: hunter2;",
    "a\n",
    "",
];

#[test]
fn an_unfinished_end_is_held_from_the_first_byte_a_whole_shape_could_still_mask() {
    for (text, held) in HELD {
        let at = unsettled_from(text, 4096);
        assert_eq!(at.map(|at| &text[at..]), Some(*held), "{text:?}");
    }
    for text in SETTLED {
        assert_eq!(unsettled_from(text, 4096), None, "{text:?}");
    }
}

#[test]
fn a_tail_longer_than_the_window_is_not_held() {
    let long = format!("x ghp_{}", "a".repeat(100));
    assert_eq!(unsettled_from(&long, 4096), Some(2));
    assert_eq!(unsettled_from(&long, 50), None);
}
