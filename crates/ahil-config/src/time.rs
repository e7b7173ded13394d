//! UTC timestamps in the two shapes results and files use, without a calendar dependency. One
//! module for the whole program, so every timestamp has the same form.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2026-11-29T20:47:19.769Z`: what `started_at` / `finished_at` carry.
pub fn iso_millis(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let (date, time) = split(since.as_secs());
    format!("{date}T{time}.{:03}Z", since.subsec_millis())
}

/// `2026-11-29T20:47:19Z`: what `checked_at` / `loaded_at` carry.
pub fn iso_seconds(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let (date, time) = split(since.as_secs());
    format!("{date}T{time}Z")
}

/// The current time as [`iso_millis`].
pub fn now_millis() -> String {
    iso_millis(SystemTime::now())
}

/// The current time as [`iso_seconds`].
pub fn utc_now() -> String {
    iso_seconds(SystemTime::now())
}

fn split(secs: u64) -> (String, String) {
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}:{:02}:{:02}", rem / 3600, (rem % 3600) / 60, rem % 60),
    )
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_iso_with_millis_and_z() {
        let at = UNIX_EPOCH + Duration::from_millis(1_796_071_639_769);
        assert_eq!(iso_millis(at), "2026-11-30T20:47:19.769Z");
        assert_eq!(iso_seconds(at), "2026-11-30T20:47:19Z");
    }

    #[test]
    fn the_epoch_and_a_leap_day_format_correctly() {
        assert_eq!(iso_seconds(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let leap = UNIX_EPOCH + Duration::from_hours(264_384);
        assert_eq!(iso_seconds(leap), "2000-02-29T00:00:00Z");
    }
}
