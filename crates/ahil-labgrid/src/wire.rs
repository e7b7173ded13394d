//! The protobuf messages of labgrid's coordinator protocol that this client sends or reads, encoded
//! by hand: a handful of string and integer fields, where a code generator would bring a build
//! script and a runtime for the whole protocol (decision 0017). Field numbers are those of the
//! vendored `proto/labgrid-coordinator.proto`; `tests::every_field_number_is_the_vendored_protos`
//! reads that file and fails on any that differ. Unknown fields are skipped, as protobuf requires.

use bytes::{BufMut, Bytes, BytesMut};

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

/// `ClientInMessage.sync` and `ClientInMessage.startup`.
const CLIENT_IN_SYNC: u32 = 1;
const CLIENT_IN_STARTUP: u32 = 2;
/// `StartupDone.version`, `StartupDone.name`.
const STARTUP_VERSION: u32 = 1;
const STARTUP_NAME: u32 = 2;
/// `Sync.id`.
const SYNC_ID: u32 = 1;
/// `ClientOutMessage.sync`.
const CLIENT_OUT_SYNC: u32 = 1;
/// `AcquirePlaceRequest.placename`, `ReleasePlaceRequest.placename` and `.fromuser`.
const PLACENAME: u32 = 1;
const FROMUSER: u32 = 2;
/// `GetPlacesResponse.places`.
const PLACES: u32 = 1;
/// `Place.name`, `Place.acquired`, `Place.reservation`.
const PLACE_NAME: u32 = 1;
const PLACE_ACQUIRED: u32 = 6;
const PLACE_RESERVATION: u32 = 11;
/// `GetReservationsResponse.reservations`; `Reservation.owner`, `.token`, `.state`.
const RESERVATIONS: u32 = 1;
const RESERVATION_OWNER: u32 = 1;
const RESERVATION_TOKEN: u32 = 2;
const RESERVATION_STATE: u32 = 3;

/// A place as the coordinator lists it: only what a claim needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Place {
    pub name: String,
    /// `host/user` of whoever has acquired it.
    pub acquired: Option<String>,
    /// The token of the reservation it is allocated to.
    pub reservation: Option<String>,
}

/// A reservation: its owner (`host/user`), token and state. The place it is allocated to names
/// its token (`Place.reservation`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reservation {
    pub owner: String,
    pub token: String,
    /// labgrid's `ReservationState` number; [`Reservation::state_name`] names it.
    pub state: u64,
}

impl Reservation {
    /// The state as `labgrid-client reservations` prints it.
    pub fn state_name(&self) -> String {
        match self.state {
            0 => "waiting".to_owned(),
            1 => "allocated".to_owned(),
            2 => "acquired".to_owned(),
            3 => "expired".to_owned(),
            4 => "invalid".to_owned(),
            n => format!("state {n}"),
        }
    }
}

/// The bytes were not the message they should have been.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed protobuf from the coordinator: {0}")]
pub struct Malformed(pub &'static str);

fn key(out: &mut BytesMut, field: u32, wire: u8) {
    varint(out, u64::from(field << 3 | u32::from(wire)));
}

fn varint(out: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        out.put_u8(low_seven(v) | 0x80);
        v >>= 7;
    }
    out.put_u8(low_seven(v));
}

fn low_seven(v: u64) -> u8 {
    u8::try_from(v & 0x7f).expect("seven bits fit a byte")
}

fn bytes_field(out: &mut BytesMut, field: u32, value: &[u8]) {
    key(out, field, LEN);
    varint(out, value.len() as u64);
    out.put_slice(value);
}

/// `ClientInMessage{startup: StartupDone{version, name}}`.
pub fn startup(version: &str, name: &str) -> Bytes {
    let mut inner = BytesMut::new();
    bytes_field(&mut inner, STARTUP_VERSION, version.as_bytes());
    bytes_field(&mut inner, STARTUP_NAME, name.as_bytes());
    let mut out = BytesMut::new();
    bytes_field(&mut out, CLIENT_IN_STARTUP, &inner);
    out.freeze()
}

/// `ClientInMessage{sync: Sync{id}}`: the coordinator answers it in order, so its answer proves
/// that the startup before it was taken.
pub fn sync(id: u64) -> Bytes {
    let mut inner = BytesMut::new();
    key(&mut inner, SYNC_ID, VARINT);
    varint(&mut inner, id);
    let mut out = BytesMut::new();
    bytes_field(&mut out, CLIENT_IN_SYNC, &inner);
    out.freeze()
}

/// `AcquirePlaceRequest{placename}`.
pub fn acquire(place: &str) -> Bytes {
    let mut out = BytesMut::new();
    bytes_field(&mut out, PLACENAME, place.as_bytes());
    out.freeze()
}

/// `ReleasePlaceRequest{placename, fromuser}`: with `fromuser` the coordinator releases the place
/// only while that user holds it, so a release can never take someone else's acquisition.
pub fn release(place: &str, fromuser: &str) -> Bytes {
    let mut out = BytesMut::new();
    bytes_field(&mut out, PLACENAME, place.as_bytes());
    bytes_field(&mut out, FROMUSER, fromuser.as_bytes());
    out.freeze()
}

/// One field as read: its number and its value.
enum Value<'a> {
    Varint(u64),
    Len(&'a [u8]),
    Fixed,
}

struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn read_varint(&mut self) -> Result<u64, Malformed> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.0.split_first().ok_or(Malformed("truncated varint"))?;
            self.0 = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Malformed("varint longer than 64 bits"))
    }

    fn skip(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("field runs past the message"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn read_field(&mut self) -> Result<(u32, Value<'a>), Malformed> {
        let k = self.read_varint()?;
        let field = u32::try_from(k >> 3).map_err(|_| Malformed("field number too large"))?;
        let value = match (k & 7) as u8 {
            VARINT => Value::Varint(self.read_varint()?),
            LEN => {
                let n = usize::try_from(self.read_varint()?)
                    .map_err(|_| Malformed("length too large"))?;
                Value::Len(self.skip(n)?)
            }
            I64 => {
                self.skip(8)?;
                Value::Fixed
            }
            I32 => {
                self.skip(4)?;
                Value::Fixed
            }
            _ => return Err(Malformed("unsupported wire type")),
        };
        Ok((field, value))
    }
}

/// The fields of a message in order; a caller stops at the first malformed one.
impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        Some(self.read_field())
    }
}

fn text(bytes: &[u8]) -> Result<String, Malformed> {
    String::from_utf8(bytes.to_vec()).map_err(|_| Malformed("a string field is not UTF-8"))
}

/// The `Sync.id` a `ClientOutMessage` answers, if it answers one.
pub fn sync_answered(message: &[u8]) -> Result<Option<u64>, Malformed> {
    let mut id = None;
    for field in Fields(message) {
        if let (CLIENT_OUT_SYNC, Value::Len(inner)) = field? {
            for f in Fields(inner) {
                if let (SYNC_ID, Value::Varint(v)) = f? {
                    id = Some(v);
                }
            }
        }
    }
    Ok(id)
}

fn place(message: &[u8]) -> Result<Place, Malformed> {
    let mut place = Place::default();
    for field in Fields(message) {
        match field? {
            (PLACE_NAME, Value::Len(v)) => place.name = text(v)?,
            (PLACE_ACQUIRED, Value::Len(v)) => place.acquired = Some(text(v)?),
            (PLACE_RESERVATION, Value::Len(v)) => place.reservation = Some(text(v)?),
            _ => {}
        }
    }
    // proto3 `optional string` set to "" is how the coordinator may write "none".
    place.acquired = place.acquired.filter(|s| !s.is_empty());
    place.reservation = place.reservation.filter(|s| !s.is_empty());
    Ok(place)
}

/// Every message in the repeated field `number` of `message`, each read by `parse`.
fn repeated<T>(
    message: &[u8],
    number: u32,
    parse: fn(&[u8]) -> Result<T, Malformed>,
) -> Result<Vec<T>, Malformed> {
    let mut out = Vec::new();
    for field in Fields(message) {
        if let (n, Value::Len(inner)) = field?
            && n == number
        {
            out.push(parse(inner)?);
        }
    }
    Ok(out)
}

/// `GetPlacesResponse`.
pub fn places(message: &[u8]) -> Result<Vec<Place>, Malformed> {
    repeated(message, PLACES, place)
}

fn reservation(message: &[u8]) -> Result<Reservation, Malformed> {
    let mut r = Reservation::default();
    for field in Fields(message) {
        match field? {
            (RESERVATION_OWNER, Value::Len(v)) => r.owner = text(v)?,
            (RESERVATION_TOKEN, Value::Len(v)) => r.token = text(v)?,
            (RESERVATION_STATE, Value::Varint(v)) => r.state = v,
            _ => {}
        }
    }
    Ok(r)
}

/// `GetReservationsResponse`.
pub fn reservations(message: &[u8]) -> Result<Vec<Reservation>, Malformed> {
    repeated(message, RESERVATIONS, reservation)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTO: &str = include_str!("../proto/labgrid-coordinator.proto");

    /// The number `message.field` has in the vendored proto.
    fn number(message: &str, field: &str) -> u32 {
        let start = PROTO
            .find(&format!("message {message} {{"))
            .unwrap_or_else(|| panic!("message {message} is in the proto"));
        let body = &PROTO[start..];
        let body = &body[..body.find("\n}").expect("message ends")];
        body.lines()
            .find_map(|line| {
                let line = line.trim().trim_end_matches(';');
                let (decl, n) = line.split_once(" = ")?;
                (decl.split_whitespace().last() == Some(field)).then(|| n.trim().parse().ok())?
            })
            .unwrap_or_else(|| panic!("{message}.{field} is in the proto"))
    }

    #[test]
    fn every_field_number_is_the_vendored_protos() {
        for (message, field, ours) in [
            ("ClientInMessage", "sync", CLIENT_IN_SYNC),
            ("ClientInMessage", "startup", CLIENT_IN_STARTUP),
            ("StartupDone", "version", STARTUP_VERSION),
            ("StartupDone", "name", STARTUP_NAME),
            ("Sync", "id", SYNC_ID),
            ("ClientOutMessage", "sync", CLIENT_OUT_SYNC),
            ("AcquirePlaceRequest", "placename", PLACENAME),
            ("ReleasePlaceRequest", "placename", PLACENAME),
            ("ReleasePlaceRequest", "fromuser", FROMUSER),
            ("GetPlacesResponse", "places", PLACES),
            ("Place", "name", PLACE_NAME),
            ("Place", "acquired", PLACE_ACQUIRED),
            ("Place", "reservation", PLACE_RESERVATION),
            ("GetReservationsResponse", "reservations", RESERVATIONS),
            ("Reservation", "owner", RESERVATION_OWNER),
            ("Reservation", "token", RESERVATION_TOKEN),
            ("Reservation", "state", RESERVATION_STATE),
        ] {
            assert_eq!(number(message, field), ours, "{message}.{field}");
        }
    }

    #[test]
    fn a_place_list_skips_fields_it_does_not_read_of_every_wire_type() {
        let mut place = BytesMut::new();
        bytes_field(&mut place, PLACE_NAME, b"bench-1");
        bytes_field(&mut place, 2, b"alias");
        key(&mut place, 9, I64);
        place.put_f64_le(1.5);
        bytes_field(&mut place, PLACE_ACQUIRED, b"host/alice");
        key(&mut place, 12, VARINT);
        varint(&mut place, 300);
        key(&mut place, 13, I32);
        place.put_u32_le(7);
        bytes_field(&mut place, PLACE_RESERVATION, b"");
        let mut list = BytesMut::new();
        bytes_field(&mut list, PLACES, &place);
        assert_eq!(
            places(&list).expect("well formed"),
            vec![Place {
                name: "bench-1".into(),
                acquired: Some("host/alice".into()),
                reservation: None,
            }]
        );
    }

    #[test]
    fn a_reservation_is_read_with_its_state() {
        let mut r = BytesMut::new();
        bytes_field(&mut r, RESERVATION_OWNER, b"desk/alice");
        bytes_field(&mut r, RESERVATION_TOKEN, b"TOKEN1");
        key(&mut r, RESERVATION_STATE, VARINT);
        varint(&mut r, 1);
        let mut list = BytesMut::new();
        bytes_field(&mut list, RESERVATIONS, &r);
        let read = reservations(&list).expect("well formed");
        assert_eq!(read[0].state_name(), "allocated");
        assert_eq!(read[0].owner, "desk/alice");
    }

    #[test]
    fn a_truncated_message_is_malformed_not_a_panic() {
        let mut list = BytesMut::new();
        bytes_field(&mut list, PLACES, &acquire("bench-1"));
        for cut in 1..list.len() {
            assert!(places(&list[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_sync_answer_is_read_back() {
        // ClientOutMessage{sync: Sync{id: 300}} has the same shape as ClientInMessage.sync.
        assert_eq!(sync_answered(&sync(300)).expect("well formed"), Some(300));
        assert_eq!(sync_answered(&[]).expect("well formed"), None);
    }
}
