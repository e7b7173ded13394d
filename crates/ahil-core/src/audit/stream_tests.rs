use std::time::{Duration, Instant};

use super::*;

fn pieces(mask: &mut StreamMask, pieces: &[&[u8]]) -> Vec<u8> {
    pieces.iter().flat_map(|p| mask.next(p)).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_credential_read_one_byte_at_a_time_is_masked() {
    let mut mask = StreamMask::default();
    let text = b"boot\npassword=hunter2 ok\nAuthorization: Bearer abc.def\n";
    let shown: Vec<u8> = text.iter().flat_map(|b| mask.next(&[*b])).collect();
    assert_eq!(
        String::from_utf8_lossy(&shown),
        "boot\npassword=[redacted] ok\nAuthorization: Bearer [redacted]\n"
    );
}

#[test]
fn a_credential_split_across_pieces_is_masked_and_other_bytes_pass_as_they_came() {
    let mut mask = StreamMask::default();
    assert_eq!(
        pieces(
            &mut mask,
            &[b"wifi passw", b"ord=hun", b"ter2 up\n\xff\x00 tick"]
        ),
        b"wifi password=[redacted] up\n\xff\x00 tick"
    );
    // A URL's password is only a password once its `@` arrives: until its authority ends, what
    // follows the colon waits.
    let mut mask = StreamMask::default();
    assert_eq!(
        pieces(&mut mask, &[b"fetch https://bob:hunter2", b"@host/x\n"]),
        b"fetch https://bob:[redacted]@host/x\n"
    );
}

/// One text for every shape a pass only knows once whole, and for the keyed ones beside them.
const SHAPES: &[&str] = &[
    "id AKIAIOSFODNN7EXAMPLE ok\n",
    "gh ghp_0123456789abcdefghijABCDEFGHIJ0123 ok\n",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz\n",
    "glpat-0123456789abcdefABCD xoxb-1234567890-abcdefghij\n",
    "k=sk-ant-api03-0123456789abcdefABCDEF AIzaSyA0123456789abcdefghijABCDEFGHIJ_-x\n",
    "npm_0123456789abcdefghijABCDEFGHIJ pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAACKlszLCJ\n",
    "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-Nature_1 end\n",
    "scp bob:hunter2@host.example:/fw.bin .\n",
    "proxy=ci:p@ss@proxy:3128 up\n",
    "fetch https://bob:hunter2@example.com/x and https://ghtoken123@example.com/r.git\n",
    "(see https://u:p@h)\n",
    "-H \"X-Auth: Bearer abc.DEF-123\" url\n",
    "(Authorization: Bearer abc.def)\n",
    "authorization: dXNlcjpwYXNz\n",
    "token: abc123def and password: 'hunter2' and api_key=\"s3cr3t\"\n",
    "Cookie: session=abc; id=2\n",
    "run --password hunter2 --speed 4000\n",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\n",
    "{\"status\":\"ok\",\"token\":\"abc123\"} next\n",
];

#[test]
fn a_near_miss_polled_at_any_cut_point_reads_as_it_came() {
    for whole in [
        "unexpected token: '}' at 3:14\n",
        "clone ssh://git@github.com/org/repo.git ok\n",
        "login: root@board:~# ASIA 12:30 e\n",
    ] {
        assert_eq!(redact_text(whole), whole);
        for cut in 0..=whole.len() {
            let mut mask = StreamMask::default();
            let mut all = mask.next(&whole.as_bytes()[..cut]);
            all.extend(mask.next(&whole.as_bytes()[cut..]));
            assert_eq!(text(&all), whole, "cut after {:?}", &whole[..cut]);
        }
    }
}

#[test]
fn a_poll_at_any_cut_point_of_any_shape_never_shows_more_than_the_masked_whole() {
    for whole in SHAPES {
        let masked = redact_text(whole);
        assert_ne!(masked, *whole, "the sample masks something: {whole:?}");
        let bytes = whole.as_bytes();
        for cut in 0..=bytes.len() {
            let mut mask = StreamMask::default();
            let first = mask.next(&bytes[..cut]);
            assert!(
                masked.as_bytes().starts_with(&first),
                "polled after {:?}: {:?}",
                &whole[..cut],
                text(&first)
            );
            let mut all = first;
            all.extend(mask.next(&bytes[cut..]));
            all.extend(mask.finish());
            assert_eq!(text(&all), masked, "cut after {:?}", &whole[..cut]);
        }
        // And a byte at a time: every prefix shown is a prefix of the masked whole.
        let mut mask = StreamMask::default();
        let mut all = Vec::new();
        for b in bytes {
            all.extend(mask.next(&[*b]));
            assert!(
                masked.as_bytes().starts_with(&all),
                "a byte at a time: {:?}",
                text(&all)
            );
        }
        assert_eq!(text(&all), masked, "a byte at a time");
    }
}

#[test]
fn a_tail_that_cannot_become_a_credential_goes_out_as_it_reads() {
    let mut mask = StreamMask::default();
    assert_eq!(mask.next(b"hello"), b"hello");
    assert_eq!(mask.next(b" wor"), b" wor");
    // A time's hour is no user, a prompt's colon has nothing after it yet, `0x` is no prefix.
    assert_eq!(mask.next(b"ld 12:3"), b"ld 12:3");
    assert_eq!(mask.next(b"0 login:"), b"0 login:");
    assert_eq!(mask.next(b" 0x2000"), b" 0x2000");
    // What follows a user's colon waits for its word to end.
    assert_eq!(mask.next(b" bob:hu"), b" bob:");
    assert_eq!(mask.next(b"nter2@h"), b"");
    assert_eq!(mask.next(b"ost ok"), b"[redacted]@host ok");
}

#[test]
fn a_held_tail_goes_out_as_it_reads_when_the_stream_ends() {
    let mut mask = StreamMask::default();
    assert_eq!(mask.next(b"x ghp_ab"), b"x ");
    assert_eq!(mask.finish(), b"ghp_ab");
    assert_eq!(mask.finish(), b"");
}

#[test]
fn a_long_stream_keeps_a_bounded_context_and_still_masks() {
    let mut mask = StreamMask::default();
    let line = [b'x'; 100];
    for _ in 0..400 {
        mask.next(&line);
        mask.next(b"\n");
    }
    assert!(mask.seen.len() <= 2 * CONTEXT_BYTES);
    assert_eq!(
        pieces(&mut mask, &[b"token=", b"abc\n"]),
        b"token=[redacted]\n"
    );
    // Every piece ending in a word that might become a key id still forgets old text.
    for _ in 0..400 {
        mask.next(b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nA");
    }
    assert!(mask.seen.len() <= 2 * CONTEXT_BYTES);
}

/// A source that has `pieces` at once, then nothing until the wait it is given.
fn source(pieces: &[&[u8]]) -> impl FnMut(Instant) -> Pulled {
    let mut pieces: Vec<Vec<u8>> = pieces.iter().rev().map(|p| p.to_vec()).collect();
    move |until| {
        if let Some(bytes) = pieces.pop() {
            return Pulled {
                bytes,
                ended: false,
            };
        }
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        Pulled::default()
    }
}

/// What a read shows the agent: the masked text and whether a pattern matched.
fn shown(took: &Took) -> (String, Option<bool>) {
    (text(&took.bytes), took.matched)
}

fn read(
    stream: &mut MaskedStream,
    pieces: &[&[u8]],
    max: usize,
    until: &[&str],
) -> (Took, Duration) {
    let patterns: Vec<Vec<u8>> = until.iter().map(|p| p.as_bytes().to_vec()).collect();
    let started = Instant::now();
    let wait = Duration::from_millis(150);
    let took = stream.read(
        max,
        started + wait,
        &patterns,
        1 << 16,
        source(pieces),
        || false,
    );
    (took, started.elapsed())
}

#[test]
fn an_until_without_credentials_reads_through_the_first_match_and_keeps_the_rest() {
    // (case, pieces as they arrive, max_bytes, patterns, bytes taken, matched, bytes left)
    type Case<'a> = (
        &'a str,
        &'a [&'a [u8]],
        usize,
        &'a [&'a str],
        &'a str,
        bool,
        usize,
    );
    let cases: [Case; 4] = [
        (
            "earliest of two patterns",
            &[b"boot ok\nready\n"],
            64,
            &["ready", "ok"],
            "boot ok",
            true,
            7,
        ),
        (
            "a match split across arrivals",
            &[b"bo", b"ot ok"],
            64,
            &["boot ok"],
            "boot ok",
            true,
            0,
        ),
        (
            "never sent",
            &[b"partial"],
            64,
            &["never"],
            "partial",
            false,
            0,
        ),
        (
            "beyond max_bytes",
            &[b"0123456789ok"],
            4,
            &["ok"],
            "0123",
            false,
            8,
        ),
    ];
    for (case, pieces, max, until, taken, matched, left) in cases {
        let mut stream = MaskedStream::default();
        let (took, _) = read(&mut stream, pieces, max, until);
        assert_eq!(shown(&took), (taken.into(), Some(matched)), "{case}");
        assert_eq!(took.remaining, left, "{case}");
    }
}

const PLANTED: &[u8] = b"boot\nid AKIAIOSFODNN7EXAMPLE\nready\n";

#[test]
fn an_until_on_a_credentials_prefix_reads_as_text_that_never_arrives() {
    let wait = Duration::from_millis(150);
    for prefix in ["AKIAI", "AKIAIOSFODNN7EXAMPLE", "id AKIA", "EXAMPLE"] {
        let mut stream = MaskedStream::default();
        let (took, waited) = read(&mut stream, &[PLANTED], 1 << 16, &[prefix]);
        assert_eq!(
            shown(&took),
            ("boot\nid [redacted]\nready\n".into(), Some(false)),
            "{prefix}"
        );
        assert!(waited >= wait, "{prefix}: the wait ran out");
        // As a pattern that never arrives reads.
        let mut stream = MaskedStream::default();
        let (never, _) = read(&mut stream, &[PLANTED], 1 << 16, &["never"]);
        assert_eq!(never, took, "{prefix}");
    }
}

#[test]
fn an_until_on_text_after_a_credential_matches_where_the_masked_stream_has_it() {
    let mut stream = MaskedStream::default();
    let (took, waited) = read(&mut stream, &[PLANTED], 1 << 16, &["ready"]);
    assert_eq!(
        shown(&took),
        ("boot\nid [redacted]\nready".into(), Some(true))
    );
    assert_eq!(took.remaining, 1);
    assert!(waited < Duration::from_millis(150));
    // A pattern across the mask matches the mask, as the agent sees it.
    let mut stream = MaskedStream::default();
    let (took, _) = read(&mut stream, &[PLANTED], 1 << 16, &["[redacted]\nre"]);
    assert_eq!(took.matched, Some(true));
    // max_bytes counts masked bytes.
    let mut stream = MaskedStream::default();
    let (took, _) = read(&mut stream, &[PLANTED], 12, &["ready"]);
    assert_eq!(shown(&took), ("boot\nid [red".into(), Some(false)));
}

#[test]
fn a_credential_still_open_hides_what_follows_it_from_a_pattern_until_it_is_whole() {
    // The key id has not ended: nothing from it on is in the masked stream yet.
    let mut stream = MaskedStream::default();
    let (took, waited) = read(&mut stream, &[b"id AKIAIOSF"], 1 << 16, &["AKIA"]);
    assert_eq!(shown(&took), ("id ".into(), Some(false)));
    assert!(waited >= Duration::from_millis(150));
    // Without a pattern the read takes what is settled and leaves the open word.
    let (took, _) = read(&mut stream, &[b"ODNN7EXAMPLE"], 1 << 16, &[]);
    assert_eq!(text(&took.bytes), "");
    // Its end decides it, and the text after it can match.
    let (took, _) = read(&mut stream, &[b" done\n"], 1 << 16, &["done"]);
    assert_eq!(shown(&took), ("[redacted] done".into(), Some(true)));
}

#[test]
fn an_ended_source_gives_the_held_tail_and_a_full_queue_drops_its_oldest() {
    let mut stream = MaskedStream::default();
    let mut once = Some(b"x ghp_ab".to_vec());
    let took = stream.read(
        64,
        Instant::now(),
        &[],
        64,
        |_| Pulled {
            bytes: once.take().unwrap_or_default(),
            ended: true,
        },
        || false,
    );
    assert_eq!(text(&took.bytes), "x ghp_ab");
    let mut stream = MaskedStream::default();
    let took = stream.read(4, Instant::now(), &[], 8, source(&[b"0123456789"]), || {
        false
    });
    assert_eq!(
        (text(&took.bytes), took.dropped, took.remaining),
        ("2345".into(), 2, 4)
    );
}

#[test]
fn a_read_given_up_takes_nothing_and_the_next_read_gets_what_arrived() {
    let mut stream = MaskedStream::default();
    let took = stream.read(
        64,
        Instant::now() + Duration::from_secs(30),
        &[b"never".to_vec()],
        64,
        source(&[b"hello\n"]),
        || true,
    );
    assert_eq!((took.bytes.len(), took.matched), (0, Some(false)));
    assert!(
        took.gave_up,
        "the read says it ended because it was given up"
    );
    let took = stream.read(64, Instant::now(), &[], 64, source(&[]), || false);
    assert_eq!(text(&took.bytes), "hello\n");
    assert!(!took.gave_up, "a read that ends by its own rules says so");
}
