//! Read what the Verilator harness wrote and compare it with the reference's expectations:
//! the first packet treated differently is reported with its bytes, what the reference did
//! and what the RTL did.

use core::fmt;

use crate::session::{Answer, DataVerdict, Expected};

/// What came out of the RTL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RtlRun {
    /// One verdict a data-path packet, in order.
    pub verdicts: Vec<DataVerdict>,
    /// The answers on the output stream, in order, a multicast once a rank (`copies` 1).
    pub answers: Vec<Answer>,
    /// The packets on the host port, in order.
    pub host: Vec<Vec<u8>>,
    /// Cycle counts at the script's marks.
    pub marks: Vec<u64>,
    /// The counters read at the end (sml_counters).
    pub counters: Vec<u64>,
    /// The per-job counters read at the end (sml_job_counters), by table entry.
    pub job_counters: Vec<[u64; 9]>,
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

impl RtlRun {
    /// Parse the harness's output.
    pub fn parse(text: &str) -> Result<RtlRun, String> {
        let mut run = RtlRun::default();
        for (n, line) in text.lines().enumerate() {
            let at = |e: String| format!("harness output line {}: {e}: {line}", n + 1);
            let f: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| -> Result<u64, String> {
                f.get(i)
                    .ok_or_else(|| at("too few fields".into()))?
                    .parse::<u64>()
                    .map_err(|e| at(e.to_string()))
            };
            match f.first().copied() {
                Some("v") => run.verdicts.push(DataVerdict {
                    kind: num(1)? as u8,
                    reason: num(2)? as u8,
                    rank: num(3)? as u16,
                }),
                Some("o") => run.answers.push(Answer {
                    multicast: num(1)? == 1,
                    rank: num(2)? as u16,
                    copies: 1,
                    bytes: unhex(f.get(3).copied().unwrap_or("")).map_err(at)?,
                }),
                Some("h") => run
                    .host
                    .push(unhex(f.get(1).copied().unwrap_or("")).map_err(at)?),
                Some("mark") => run.marks.push(num(1)?),
                Some("c") => run.counters.push(num(2)?),
                Some("j") => {
                    let (j, c) = (num(1)? as usize, num(2)? as usize);
                    if run.job_counters.len() <= j {
                        run.job_counters.resize(j + 1, [0; 9]);
                    }
                    *run.job_counters[j]
                        .get_mut(c)
                        .ok_or_else(|| at("no such job counter".into()))? = num(3)?;
                }
                _ => return Err(at("unknown line".into())),
            }
        }
        Ok(run)
    }
}

/// The first difference between the RTL and the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The packet's index in the script (`None`: the counters, or output left over).
    pub packet: Option<usize>,
    /// The packet.
    pub input: Vec<u8>,
    /// What the reference did.
    pub expected: String,
    /// What the RTL did.
    pub got: String,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.packet {
            Some(i) => writeln!(f, "packet {i} in:  {}", hex(&self.input))?,
            None => writeln!(f, "after the last packet:")?,
        }
        writeln!(f, "  expected: {}", self.expected)?;
        write!(f, "  got:      {}", self.got)
    }
}

fn show(v: Option<&(DataVerdict, Option<Answer>)>) -> String {
    match v {
        None => "to the host port".into(),
        Some((v, a)) => {
            let what = match v.kind {
                0 => "consumed".to_string(),
                1 => format!("drop reason {}", v.reason),
                2 => "multicast".to_string(),
                _ => format!("unicast to rank {}", v.rank),
            };
            match a {
                Some(a) => format!("{what} {}", hex(&a.bytes)),
                None => what,
            }
        }
    }
}

/// What a clean comparison covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Packets fed.
    pub packets: usize,
    /// Of which to the host port.
    pub host: usize,
    /// Answers (every copy of a multicast) compared byte for byte.
    pub answers: usize,
    /// Data-path drops.
    pub drops: usize,
}

/// Compare the RTL's run with the expectations, packet by packet in order, then the
/// counters: drops by reason, data-path packets, consumed, multicast, unicast; then each
/// job's (contributions, completions, retransmit replies, duplicates, stale, rejected,
/// probes, overflows, unauthorized: the data path's share of the StatusReply's).
pub fn compare(expected: &Expected, rtl: &RtlRun) -> Result<Summary, Mismatch> {
    let (mut vi, mut ai, mut hi) = (0, 0, 0);
    let mut counters = [0u64; 20];
    let mut summary = Summary {
        packets: expected.inputs.len(),
        host: 0,
        answers: 0,
        drops: 0,
    };
    for (i, (input, want)) in expected.inputs.iter().zip(&expected.outcomes).enumerate() {
        let mismatch = |got: String| Mismatch {
            packet: Some(i),
            input: input.clone(),
            expected: show(want.as_ref()),
            got,
        };
        match want {
            None => {
                let got = rtl.host.get(hi);
                if got != Some(input) {
                    let got = got.map_or("nothing on the host port".into(), |g| {
                        format!("host port {}", hex(g))
                    });
                    return Err(mismatch(got));
                }
                hi += 1;
                summary.host += 1;
            }
            Some((v, answer)) => {
                let got_v = rtl.verdicts.get(vi).copied();
                // A multicast comes as one copy a rank, to ranks 0, 1, ... in turn: find the
                // first copy that differs.
                let copies = answer.as_ref().map_or(0, |a| usize::from(a.copies));
                let bad_copy = answer.as_ref().and_then(|a| {
                    (0..copies).find(|&c| {
                        !rtl.answers.get(ai + c).is_some_and(|g| {
                            g.bytes == a.bytes
                                && g.multicast == a.multicast
                                && g.rank == if a.multicast { c as u16 } else { a.rank }
                        })
                    })
                });
                if !got_v.is_some_and(|g| v.agrees(&g)) || bad_copy.is_some() {
                    let c = bad_copy.unwrap_or(0);
                    let got = match got_v {
                        None => "no verdict".to_string(),
                        Some(g) => {
                            let got_a = if g.answers() {
                                rtl.answers.get(ai + c).cloned()
                            } else {
                                None
                            };
                            let copy = match &got_a {
                                Some(a) if a.multicast => format!(" (copy to rank {})", a.rank),
                                _ => String::new(),
                            };
                            show(Some(&(g, got_a))) + &copy
                        }
                    };
                    let mut m = mismatch(got);
                    if copies > 1 {
                        m.expected += &format!(" (copy to rank {c} of {copies})");
                    }
                    return Err(m);
                }
                vi += 1;
                if answer.is_some() {
                    ai += copies;
                    summary.answers += copies;
                }
                counters[16] += 1;
                match v.kind {
                    0 => counters[17] += 1,
                    1 => {
                        counters[usize::from(v.reason)] += 1;
                        summary.drops += 1;
                    }
                    2 => counters[18] += 1,
                    _ => counters[19] += 1,
                }
            }
        }
    }
    let left = |what: &str, n: usize| Mismatch {
        packet: None,
        input: Vec::new(),
        expected: format!("no more {what}"),
        got: format!("{n} more"),
    };
    if rtl.verdicts.len() > vi {
        return Err(left("verdicts", rtl.verdicts.len() - vi));
    }
    if rtl.answers.len() > ai {
        return Err(left("answers", rtl.answers.len() - ai));
    }
    if rtl.host.len() > hi {
        return Err(left("host packets", rtl.host.len() - hi));
    }
    if rtl.counters[..] != counters[..] {
        return Err(Mismatch {
            packet: None,
            input: Vec::new(),
            expected: format!("counters {counters:?}"),
            got: format!("counters {:?}", rtl.counters),
        });
    }
    for (j, want) in expected.job_counters.iter().enumerate() {
        let got = rtl.job_counters.get(j).copied().unwrap_or_default();
        if got != *want {
            return Err(Mismatch {
                packet: None,
                input: Vec::new(),
                expected: format!("job table entry {j}: counters {want:?}"),
                got: format!("job table entry {j}: counters {got:?}"),
            });
        }
    }
    Ok(summary)
}
