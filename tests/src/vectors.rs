//! Golden wire vectors: load `tests/vectors/wire.txt` and describe parsed messages in its
//! terms, so a test can compare a parsed [`Message`] with the `fields:` of a vector.
//!
//! The file format is documented in `tests/vectors/README.md`; [`load`] implements it and
//! [`describe`] writes exactly the keys and value formats the file uses.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use switchml_core::wire::{AbortReason, Error, Message, MessageType, SlotState};

/// The wire vectors, `tests/vectors/wire.txt`.
pub const WIRE: &str = include_str!("../vectors/wire.txt");

/// One vector: a datagram and either the message it holds or the error it must give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vector {
    /// The name in brackets, unique in the file.
    pub name: String,
    /// One line of prose.
    pub meaning: String,
    /// The parsed message, as [`describe`] writes it (valid vectors).
    pub fields: Option<BTreeMap<String, String>>,
    /// The error, as [`error_name`] writes it (invalid vectors).
    pub expect_error: Option<String>,
    /// The datagram.
    pub bytes: Vec<u8>,
}

/// A vector being read: which lines it has had so far.
struct Partial {
    name: String,
    line: usize,
    meaning: Option<String>,
    fields: Option<BTreeMap<String, String>>,
    expect_error: Option<String>,
    bytes: Option<Vec<u8>>,
}

impl Partial {
    fn finish(self) -> Result<Vector, String> {
        let at = |what: &str| format!("vector [{}] (line {}): {what}", self.name, self.line);
        let meaning = self.meaning.ok_or_else(|| at("no `meaning:` line"))?;
        let bytes = self.bytes.ok_or_else(|| at("no `bytes:` line"))?;
        if self.fields.is_some() == self.expect_error.is_some() {
            return Err(at("needs exactly one of `fields:` and `expect:`"));
        }
        Ok(Vector {
            name: self.name,
            meaning,
            fields: self.fields,
            expect_error: self.expect_error,
            bytes,
        })
    }
}

/// Parse the vector file format; errors name the line.
pub fn load(text: &str) -> Result<Vec<Vector>, String> {
    let mut vectors = Vec::new();
    let mut current: Option<Partial> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("line {n}: bad vector name `{name}`"));
            }
            if vectors.iter().any(|v: &Vector| v.name == name)
                || current.as_ref().is_some_and(|p| p.name == name)
            {
                return Err(format!("line {n}: vector [{name}] appears twice"));
            }
            if let Some(done) = current.take() {
                vectors.push(done.finish()?);
            }
            current = Some(Partial {
                name: name.to_string(),
                line: n,
                meaning: None,
                fields: None,
                expect_error: None,
                bytes: None,
            });
            continue;
        }
        let Some(v) = current.as_mut() else {
            return Err(format!("line {n}: `{line}` before the first [name]"));
        };
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!("line {n}: expected `key: value`, got `{line}`"));
        };
        let value = value.trim();
        match key {
            "meaning" => {
                if v.meaning.replace(value.to_string()).is_some() {
                    return Err(format!("line {n}: second `meaning:`"));
                }
            }
            "fields" => {
                let fields = v.fields.get_or_insert_with(BTreeMap::new);
                for token in value.split_whitespace() {
                    let Some((k, val)) = token.split_once('=') else {
                        return Err(format!("line {n}: field `{token}` is not key=value"));
                    };
                    if fields.insert(k.to_string(), val.to_string()).is_some() {
                        return Err(format!("line {n}: field `{k}` appears twice"));
                    }
                }
            }
            "expect" => {
                let Some(error) = value.strip_prefix("error ") else {
                    return Err(format!("line {n}: expected `expect: error <kind>`"));
                };
                if v.expect_error.replace(error.trim().to_string()).is_some() {
                    return Err(format!("line {n}: second `expect:`"));
                }
            }
            "bytes" => {
                let bytes = v.bytes.get_or_insert_with(Vec::new);
                for token in value.split_whitespace() {
                    let ok = token.len() == 2 && token.chars().all(|c| c.is_ascii_hexdigit());
                    let byte = u8::from_str_radix(token, 16).ok().filter(|_| ok);
                    bytes.push(byte.ok_or_else(|| format!("line {n}: bad byte `{token}`"))?);
                }
            }
            other => return Err(format!("line {n}: unknown key `{other}`")),
        }
    }
    if let Some(done) = current.take() {
        vectors.push(done.finish()?);
    }
    Ok(vectors)
}

/// Return the name the file uses for a message type: snake_case, `unknown` for the rest.
pub fn type_name(t: MessageType) -> &'static str {
    match t {
        MessageType::Contribution => "contribution",
        MessageType::Result => "result",
        MessageType::Join => "join",
        MessageType::JoinReply => "join_reply",
        MessageType::Probe => "probe",
        MessageType::ProbeReply => "probe_reply",
        MessageType::Abort => "abort",
        MessageType::Status => "status",
        MessageType::StatusReply => "status_reply",
        MessageType::Leave => "leave",
        MessageType::Cookie => "cookie",
        MessageType::Unknown(_) => "unknown",
    }
}

/// Return the name the file uses for an abort reason: snake_case, `0x..` when unknown.
pub fn reason_name(r: AbortReason) -> String {
    match r {
        AbortReason::UnknownJob => "unknown_job".into(),
        AbortReason::UnknownRank => "unknown_rank".into(),
        AbortReason::WorldMismatch => "world_mismatch".into(),
        AbortReason::SlotRange => "slot_range".into(),
        AbortReason::CountTooLarge => "count_too_large".into(),
        AbortReason::Shutdown => "shutdown".into(),
        AbortReason::WorkerFailed => "worker_failed".into(),
        AbortReason::BadKey => "bad_key".into(),
        AbortReason::RankRestarted => "rank_restarted".into(),
        AbortReason::LaneMismatch => "lane_mismatch".into(),
        AbortReason::ChunkMismatch => "chunk_mismatch".into(),
        AbortReason::SessionEnded => "session_ended".into(),
        AbortReason::WrongShard => "wrong_shard".into(),
        AbortReason::LaneCountMismatch => "lane_count_mismatch".into(),
        AbortReason::ParentFailed => "parent_failed".into(),
        AbortReason::JobRemoved => "job_removed".into(),
        AbortReason::RankSilent => "rank_silent".into(),
        AbortReason::RankRefused => "rank_refused".into(),
        AbortReason::Unknown(b) => format!("{b:#04x}"),
    }
}

/// Return the name the file uses for a slot state: snake_case, `0x..` when unknown.
pub fn state_name(s: SlotState) -> String {
    match s {
        SlotState::Idle => "idle".into(),
        SlotState::Collecting => "collecting".into(),
        SlotState::Complete => "complete".into(),
        SlotState::Unknown(b) => format!("{b:#04x}"),
    }
}

/// Return the name the file uses for an error, as in `expect: error <name>`.
pub fn error_name(e: &Error) -> String {
    match e {
        Error::Truncated => "truncated".into(),
        Error::TrailingBytes => "trailing".into(),
        Error::Version(_) => "version".into(),
        Error::Field(name) => format!("field {name}"),
        Error::Reserved(_) => "reserved".into(),
        Error::BufferTooSmall => "buffer_too_small".into(),
    }
}

/// Write bytes as `0x` and two lowercase hex digits per byte, in wire order.
fn hex(bytes: &[u8]) -> String {
    let mut s = String::from("0x");
    for b in bytes {
        write!(s, "{b:02x}").unwrap();
    }
    s
}

/// Write big-endian int32 values as a comma-separated decimal list.
fn values(bytes: &[u8]) -> String {
    let v: Vec<String> = bytes
        .chunks_exact(4)
        .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]).to_string())
        .collect();
    v.join(",")
}

/// Describe a parsed message with the keys and value formats of the vector file.
pub fn describe(msg: &Message) -> BTreeMap<String, String> {
    let mut f: Vec<(&str, String)> = vec![("type", type_name(msg.msg_type()).into())];
    match msg {
        Message::Data(r, payload) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("slot", r.slot.to_string()),
            ("ver", r.ver.to_string()),
            ("flags", format!("{:#04x}", r.flags.0)),
            ("count", r.count.to_string()),
            ("seq", r.seq.to_string()),
            ("exp", r.exp.to_string()),
            ("session", r.session.to_string()),
            ("values", values(payload)),
        ]),
        Message::Join(r) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("world", r.world.to_string()),
            ("slot_lo", r.slot_lo.to_string()),
            ("slot_count", r.slot_count.to_string()),
            ("count", r.count.to_string()),
            ("lanes", r.lanes.to_string()),
            ("nonce", r.nonce.to_string()),
            ("cookie", r.cookie.to_string()),
            ("tag", hex(&r.tag)),
        ]),
        Message::JoinReply(r) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("world", r.world.to_string()),
            ("flags", format!("{:#04x}", r.flags.0)),
            ("shards", r.shards.to_string()),
            ("max_count", r.max_count.to_string()),
            ("epoch", r.epoch.to_string()),
            ("slot_count", r.slot_count.to_string()),
            ("session", r.session.to_string()),
            ("nonce", r.nonce.to_string()),
            ("lane_slots", r.lane_slots.to_string()),
            ("count", r.count.to_string()),
            ("joined", hex(r.joined)),
        ]),
        Message::Probe(r) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("slot", r.slot.to_string()),
            ("ver", r.ver.to_string()),
            ("flags", format!("{:#04x}", r.flags.0)),
            ("seq", r.seq.to_string()),
            ("session", r.session.to_string()),
        ]),
        Message::ProbeReply(r) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("slot", r.slot.to_string()),
            ("ver", r.ver.to_string()),
            ("state", state_name(r.state)),
            ("remaining", r.remaining.to_string()),
            ("seq", r.seq.to_string()),
            ("epoch", r.epoch.to_string()),
            ("world", r.world.to_string()),
            ("session", r.session.to_string()),
            ("seen", hex(r.seen)),
        ]),
        Message::Abort(r) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("reason", reason_name(r.reason)),
            ("detail", r.detail.to_string()),
            ("epoch", r.epoch.to_string()),
            ("session", r.session.to_string()),
        ]),
        Message::Leave(r) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("session", r.session.to_string()),
        ]),
        Message::Status(r) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("nonce", r.nonce.to_string()),
            ("cookie", r.cookie.to_string()),
            ("tag", hex(&r.tag)),
        ]),
        Message::Cookie(r) => f.extend([
            ("job", r.job.to_string()),
            ("rank", r.rank.to_string()),
            ("nonce", r.nonce.to_string()),
            ("cookie", r.cookie.to_string()),
        ]),
        Message::StatusReply(r) => {
            f.extend([
                ("job", r.job.to_string()),
                ("rank", r.rank.to_string()),
                ("world", r.world.to_string()),
                ("flags", format!("{:#04x}", r.flags.0)),
                ("shards", r.shards.to_string()),
                ("slot_count", r.slot_count.to_string()),
                ("epoch", r.epoch.to_string()),
                ("joined", hex(r.joined)),
            ]);
            let counters: Vec<String> = r.counters.to_array().iter().map(u64::to_string).collect();
            f.push(("counters", counters.join(",")));
        }
        Message::Unknown {
            msg_type,
            job,
            rank,
            body,
        } => f.extend([
            ("msg_type", format!("{msg_type:#04x}")),
            ("job", job.to_string()),
            ("rank", rank.to_string()),
            ("body", hex(body)),
        ]),
    }
    f.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_a_valid_and_an_invalid_vector() {
        let text = "# comment\n\n[a]\nmeaning: one\nfields: type=x job=1\n\
                    fields: values=1,2\nbytes: 01 02\nbytes: ff\n\n\
                    [b]\nmeaning: two\nexpect: error field ver\nbytes:\n";
        let v = load(text).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name, "a");
        assert_eq!(v[0].bytes, [1, 2, 0xFF]);
        let fields = v[0].fields.as_ref().unwrap();
        assert_eq!(fields.len(), 3);
        assert_eq!(fields["values"], "1,2");
        assert_eq!(v[1].expect_error.as_deref(), Some("field ver"));
        assert!(v[1].bytes.is_empty());
    }

    #[test]
    fn rejects_malformed_files() {
        let bad = [
            "meaning: before any vector\n",
            "[a]\nmeaning: x\nfields: k=1\n",
            "[a]\nfields: k=1\nbytes: 00\n",
            "[a]\nmeaning: x\nfields: k=1\nexpect: error truncated\nbytes: 00\n",
            "[a]\nmeaning: x\nbytes: 00\n",
            "[a]\nmeaning: x\nfields: k=1 k=2\nbytes: 00\n",
            "[a]\nmeaning: x\nfields: k\nbytes: 00\n",
            "[a]\nmeaning: x\nfields: k=1\nbytes: 0g\n",
            "[a]\nmeaning: x\nfields: k=1\nbytes: 001\n",
            "[a]\nmeaning: x\nfields: k=1\nbytes: +1\n",
            "[a]\nmeaning: x\nexpect: truncated\nbytes: 00\n",
            "[a]\nmeaning: x\nfields: k=1\nbytes: 00\n[a]\nmeaning: y\nfields: k=1\nbytes: 00\n",
            "[a b]\nmeaning: x\nfields: k=1\nbytes: 00\n",
            "[a]\nmeaning: x\nfield: k=1\nbytes: 00\n",
        ];
        for text in bad {
            assert!(load(text).is_err(), "accepted {text:?}");
        }
    }
}
