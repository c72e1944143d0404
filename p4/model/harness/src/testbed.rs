//! The test bed the golden vectors are replayed on, in the model and on BMv2: four jobs
//! covering the vectors' job ids, four worker hosts on switch ports 0–3, the frames that
//! carry each vector, and the `simple_switch_CLI` commands that load the same tables into
//! the v1model program (`p4/replay/commands.txt` is [`cli_commands`], checked by a test).
//!
//! Each golden switch scenario (`tests/vectors/switch.txt`) gets a bed of its own on the same
//! hosts ([`scenario_pipeline`], [`scenario_cli_commands`]): its one job, its epoch and
//! `max_count`, ranks at hosts 0, 1, 2. [`scenario_frames`] runs a scenario through it and
//! checks every answer against the file before handing the frames to the BMv2 replay.
//!
//! ```text
//!   host r = 10.0.0.(r+1), UDP port 40000+r, MAC 02:00:00:00:00:(r+1), switch port r
//!   switch = 10.0.0.254, MAC 02:00:00:00:00:fe, UDP port 0xBEE0
//! ```

mod bed;
pub mod datagrams;
pub mod multi_pass;
pub mod tiered;

pub use bed::{lane_alignments, Bed, BedJob};

use switchml_core::switch::JobConfig;
use switchml_core::wire::SWITCH_PORT;
use switchml_tests::scenarios::{Outcome, Scenario, POOL};

use switchml_p4model::classifier::{Source, WorkerAddr};
use switchml_p4model::controller::CONTROL_OUT_LEN;
use switchml_p4model::headers::{ETHERTYPE_IPV4, IP_PROTO_UDP, TRANSPORT_LEN};
use switchml_p4model::pipeline::{Config, Pipeline, Verdict, FRAME_OUT_LEN};
use switchml_p4model::udp_sender::{ipv4_checksum, SwitchAddr};
use switchml_p4model::MAX_COUNT;

/// Worker hosts, one per switch port.
pub const HOSTS: u16 = 4;
/// The epoch the test bed's switch announces.
pub const EPOCH: u32 = 0x0102_0304;
/// The switch's addresses.
pub const SWITCH: SwitchAddr = SwitchAddr {
    mac: [2, 0, 0, 0, 0, 0xFE],
    ip: [10, 0, 0, 254],
};
/// Where vectors whose rank has no host come from (port 0, never registered).
pub const STRANGER: WorkerAddr = WorkerAddr {
    port: 0,
    mac: [2, 0, 0, 0, 0, 0xC8],
    source: Source {
        ip: [10, 0, 0, 200],
        udp_port: 40200,
    },
};

/// The jobs: ids 7, 1, 9 and 0x1234 of the vectors, on a pool of 40 slots, with their keys.
pub fn jobs() -> [JobConfig; 4] {
    let job = |id, world, slot_lo, slot_count, key| JobConfig {
        id,
        world,
        slot_lo,
        slot_count,
        key,
    };
    [
        job(7, 4, 0, 16, KEY),
        job(1, 3, 16, 18, KEY),
        job(9, 2, 34, 4, KEY),
        job(0x1234, 2, 38, 2, KEY),
    ]
}

/// The key of the test bed's jobs: the one the golden Join vectors carry.
pub const KEY: u64 = 0x0123_4567_89AB_CDEF;

/// The address of host `rank`.
pub fn host(rank: u16) -> WorkerAddr {
    let r = (rank & 0xFF) as u8;
    WorkerAddr {
        port: rank,
        mac: [2, 0, 0, 0, 0, r + 1],
        source: Source {
            ip: [10, 0, 0, r + 1],
            udp_port: 40000 + rank,
        },
    }
}

/// Slots of the test bed's pool.
pub const SLOTS: usize = 40;

/// The test bed: its pool of [`SLOTS`], [`jobs`] with every rank at its host.
pub fn bed() -> Bed {
    Bed {
        config: Config {
            slots: SLOTS,
            jobs: 4,
            workers: 16,
            epoch: EPOCH,
            max_count: MAX_COUNT,
            switch: SWITCH,
        },
        jobs: jobs().into_iter().map(BedJob::at_hosts).collect(),
    }
}

/// Scenario `s`'s bed: the scenarios' pool of [`POOL`] slots of `s.max_count` values,
/// `s.epoch`, the job with its ranks at their hosts.
pub fn scenario_bed(s: &Scenario) -> Bed {
    Bed {
        config: Config {
            slots: POOL,
            jobs: 1,
            workers: usize::from(s.job.world),
            epoch: s.epoch,
            max_count: s.max_count,
            switch: SWITCH,
        },
        jobs: vec![BedJob::at_hosts(s.job)],
    }
}

/// The model set up as the test bed: every rank of every job at its host.
pub fn pipeline() -> Pipeline {
    bed().pipeline()
}

/// The model set up as scenario `s`'s bed ([`scenario_bed`]).
pub fn scenario_pipeline(s: &Scenario) -> Pipeline {
    scenario_bed(s).pipeline()
}

/// The frame the BMv2 replay sends first on every bed to see that the switch answers: a
/// Probe for job 0xFFFF, which no bed has, from the [`STRANGER`] on port 0. Its answer (an
/// Abort `UnknownJob`) depends on the epoch only, and the counters it moves are not compared.
/// (A Status of an unknown job is answered by nobody: protocol.md §3.7.)
pub fn liveness_frame() -> (u16, Vec<u8>) {
    let mut probe = [0u8; 20];
    probe[..6].copy_from_slice(&[1, 0x12, 0xFF, 0xFF, 0xFF, 0xFF]);
    frame(&probe)
}

/// One datagram of a scenario on its bed: where it enters, and every frame the model sends
/// for it with its egress port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramedStep {
    /// `scenario/step`.
    pub name: String,
    /// The ingress port.
    pub port: u16,
    /// The frame in.
    pub frame: Vec<u8>,
    /// The frames out, in replica order.
    pub out: Vec<(u16, Vec<u8>)>,
}

/// Run scenario `s` on its bed ([`scenario_pipeline`]) as framed traffic, and check every
/// step against the file: the drop reason, or a frame to the ingress port carrying the
/// file's unicast bytes, or one frame to each rank's port carrying the file's multicast
/// bytes. Returns the steps, or the first difference.
pub fn scenario_frames(s: &Scenario) -> Result<Vec<FramedStep>, String> {
    let mut p = scenario_pipeline(s);
    let mut steps = Vec::new();
    for (i, (datagram, expect)) in s.steps.iter().enumerate() {
        let name = format!("{}/{i}", s.name);
        let (port, frame) = frame(datagram);
        let hops = exchange(&mut p, port, &frame);
        // What the network sees: the last hop's verdict, every hop's frames but the CPU
        // port's (a controller's answer is a Forward, out of the port it came in on).
        let verdict = hops.last().map_or(Verdict::Consumed, |h| h.verdict);
        let cpu = p.cpu_port();
        let out: Vec<&(u16, Vec<u8>)> = hops
            .iter()
            .flat_map(|h| &h.out)
            .filter(|(to, _)| *to != cpu)
            .collect();
        let payloads_are = |b: &[u8]| out.iter().all(|(_, f)| f.get(TRANSPORT_LEN..) == Some(b));
        let ports: Vec<u16> = out.iter().map(|&(port, _)| *port).collect();
        let ok = match (expect, verdict) {
            (Outcome::Consumed, Verdict::Consumed) => out.is_empty(),
            (Outcome::Drop(want), Verdict::Drop(r)) => out.is_empty() && r.name() == want,
            (Outcome::Unicast(want, b), Verdict::Unicast { rank, .. }) => {
                rank == *want && ports == [port] && payloads_are(b)
            }
            (Outcome::Unicast(want, b), Verdict::Forward { .. }) => {
                let rank = b.get(4..6).map(|r| u16::from_be_bytes([r[0], r[1]]));
                rank == Some(*want) && ports == [port] && payloads_are(b)
            }
            (Outcome::Multicast(b), Verdict::Multicast { .. }) => {
                let ranks: Vec<u16> = (0..s.job.world).map(|r| host(r).port).collect();
                ports == ranks && payloads_are(b)
            }
            _ => false,
        };
        if !ok {
            return Err(format!(
                "[{name}] the framed model gives {verdict:?} to ports {ports:?}, the file says {expect:?}"
            ));
        }
        // The controller's frames on the CPU port are steps of their own (`/cpu`, `/cpu2`):
        // the replay sends them on the CPU port, as the controller would.
        for (h, hop) in hops.into_iter().enumerate() {
            let name = match h {
                0 => name.clone(),
                1 => format!("{name}/cpu"),
                n => format!("{name}/cpu{n}"),
            };
            steps.push(FramedStep {
                name,
                port: hop.port,
                frame: hop.frame,
                out: hop.out,
            });
        }
    }
    Ok(steps)
}

/// The same jobs for bare datagrams: ranks at their rank ports (the `Aggregator` mapping).
pub fn bare_pipeline() -> Pipeline {
    let mut p = Pipeline::new(bed().config);
    for job in jobs() {
        p.add_job_with_rank_ports(job).ok();
    }
    p
}

/// The frame a vector's datagram travels in: from the host of its rank (or the
/// [`STRANGER`]) to the switch. Returns the ingress port and the frame.
pub fn frame(datagram: &[u8]) -> (u16, Vec<u8>) {
    let rank = datagram
        .get(4..6)
        .map_or(u16::MAX, |b| u16::from_be_bytes([b[0], b[1]]));
    let from = if rank < HOSTS { host(rank) } else { STRANGER };
    (from.port, frame_between(&from, &SWITCH, datagram))
}

/// The frame that carries `datagram` from `from` to the switch at `to`.
pub fn frame_between(from: &WorkerAddr, to: &SwitchAddr, datagram: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; TRANSPORT_LEN];
    f[0..6].copy_from_slice(&to.mac);
    f[6..12].copy_from_slice(&from.mac);
    f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip_len = (28 + datagram.len()) as u16;
    f[14..26].copy_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, IP_PROTO_UDP, 0, 0]);
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[26..30].copy_from_slice(&from.source.ip);
    f[30..34].copy_from_slice(&to.ip);
    let sum = ipv4_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&sum.to_be_bytes());
    f[34..36].copy_from_slice(&from.source.udp_port.to_be_bytes());
    f[36..38].copy_from_slice(&SWITCH_PORT.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(datagram);
    f
}

/// Run one frame through `p`; return the frames it sends, with their egress ports: what a
/// switch sends its controller among them, on the CPU port ([`Pipeline::cpu_port`]).
pub fn outputs(p: &mut Pipeline, port: u16, frame: &[u8]) -> Vec<(u16, Vec<u8>)> {
    verdict_and_outputs(p, port, frame).1
}

/// One frame into a switch and what it sends for it (a [`FramedStep`] without its name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// The ingress port (the CPU port for the controller's frames).
    pub port: u16,
    /// The frame in.
    pub frame: Vec<u8>,
    /// The frames out, in replica order.
    pub out: Vec<(u16, Vec<u8>)>,
    /// What the pipeline decided, or the drop the controller decided for what the
    /// pipeline sent it.
    pub verdict: Verdict,
}

/// Run one frame through `p` and its controller (protocol.md §4.2): each frame the
/// pipeline sends the CPU port is answered by the controller's frame on the CPU port
/// ([`Pipeline::control_frame`]), the next hop, until nothing goes to the CPU port.
pub fn exchange(p: &mut Pipeline, port: u16, frame: &[u8]) -> Vec<Hop> {
    let mut hops = Vec::new();
    let mut next = Some((port, frame.to_vec()));
    while let Some((port, frame)) = next.take() {
        let (verdict, out) = verdict_and_outputs(p, port, &frame);
        let cpu = p.cpu_port();
        let mut verdict = verdict;
        if let Some((_, punted)) = out.iter().find(|(to, _)| *to == cpu) {
            let mut back = vec![0u8; CONTROL_OUT_LEN];
            match p.control_frame(punted, &mut back) {
                Ok(len) => next = Some((cpu, back[..len].to_vec())),
                Err(reason) => verdict = Verdict::Drop(reason),
            }
        }
        hops.push(Hop {
            port,
            frame,
            out,
            verdict,
        });
    }
    hops
}

/// Run one frame through `p` and its controller ([`exchange`]); return the frames that
/// leave for the network (every port but the CPU port).
pub fn answers(p: &mut Pipeline, port: u16, frame: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let cpu = p.cpu_port();
    exchange(p, port, frame)
        .into_iter()
        .flat_map(|h| h.out)
        .filter(|(to, _)| *to != cpu)
        .collect()
}

/// Run one frame through `p`; return its verdict and the frames it sends.
fn verdict_and_outputs(
    p: &mut Pipeline,
    port: u16,
    frame: &[u8],
) -> (Verdict, Vec<(u16, Vec<u8>)>) {
    let mut out = vec![0u8; FRAME_OUT_LEN];
    let verdict = p.process(port, frame, &mut out);
    let frames = match verdict {
        Verdict::Unicast { port, len, .. }
        | Verdict::Up { port, len, .. }
        | Verdict::ToCpu { port, len }
        | Verdict::Forward { port, len } => {
            vec![(port, out[..len].to_vec())]
        }
        Verdict::Multicast { group, len, .. } => {
            let mut replica = vec![0u8; FRAME_OUT_LEN];
            p.replicas(group)
                .iter()
                .filter_map(|&r| {
                    let n = p.egress(r, &out[..len], &mut replica)?;
                    Some((r.port, replica[..n].to_vec()))
                })
                .collect()
        }
        _ => Vec::new(),
    };
    (verdict, frames)
}

/// The `simple_switch_CLI` commands that load the test bed into `p4/v1model/switchml.p4`
/// (`p4/replay/commands.txt`; generated, so what generates it is said in `p4/README.md`
/// and in the test that keeps it current, not in the file).
pub fn cli_commands() -> String {
    bed().commands()
}

/// The `simple_switch_CLI` commands that load scenario `s`'s bed ([`scenario_bed`]).
pub fn scenario_cli_commands(s: &Scenario) -> String {
    scenario_bed(s).commands()
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchml_core::switch::DropReason;
    use switchml_core::wire::AbortReason;
    use switchml_p4model::headers::{PacketIn, PacketOut, CPU_HEADER_LEN};

    #[test]
    fn a_join_from_host_3_is_answered_on_port_3() {
        let mut p = pipeline();
        // Lane 2 (slots 8..12) of 3.
        let mut join = vec![0u8; 44];
        switchml_core::wire::JoinRepr {
            job: 7,
            rank: 3,
            world: 4,
            slot_lo: 8,
            slot_count: 4,
            count: 256,
            lanes: 3,
            nonce: 9,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(KEY)
        .emit(&mut switchml_core::wire::JoinPacket::new_unchecked(
            &mut join[..],
        ));
        let (port, f) = frame(&join);
        let hops = exchange(&mut p, port, &f);
        // In on port 3, out on the CPU port behind packet_in naming port 3.
        let cpu = p.cpu_port();
        assert_eq!(hops.len(), 2, "{hops:?}");
        let punted = PacketIn { port: 3, up: false }.to_bytes();
        assert_eq!(hops[0].out, vec![(cpu, [&punted[..], &f[..]].concat())]);
        // The controller sends it back behind packet_out naming port 3; the JoinReply
        // leaves there.
        assert_eq!(hops[1].port, cpu);
        let back = PacketOut {
            port: 3,
            forward: false,
        };
        assert_eq!(hops[1].frame, [&back.to_bytes()[..], &f[..]].concat());
        let [(port, reply)] = hops[1].out.as_slice() else {
            panic!("{:?}", hops[1].out);
        };
        assert_eq!(*port, 3);
        assert_eq!(&reply[0..6], &host(3).mac);
        assert_eq!(&reply[30..34], &host(3).source.ip);
        assert_eq!(reply[TRANSPORT_LEN + 1], 0x11);
        assert_eq!(p.counters().received, 1, "counted once, when it came in");

        // Another key's tag: the controller answers BadKey itself, out of port 3 as it is.
        let mut forged = join.clone();
        forged[40] ^= 1;
        let (port, f) = frame(&forged);
        let hops = exchange(&mut p, port, &f);
        assert_eq!(hops.len(), 2, "{hops:?}");
        let [(3, abort)] = hops[1].out.as_slice() else {
            panic!("{:?}", hops[1].out);
        };
        assert!(matches!(hops[1].verdict, Verdict::Forward { port: 3, .. }));
        assert_eq!(
            hops[1].frame[..CPU_HEADER_LEN],
            PacketOut {
                port: 3,
                forward: true
            }
            .to_bytes()
        );
        assert_eq!(&abort[0..6], &host(3).mac);
        assert_eq!(abort[TRANSPORT_LEN + 1], 0x14);
        assert_eq!(abort[TRANSPORT_LEN + 6], u8::from(AbortReason::BadKey));
        assert_eq!(p.job(7).map(|j| j.counters.unauthorized), Some(1));
    }

    /// With cookies (protocol.md §4.2), the controller answers a keyed Join without a valid
    /// cookie with a Cookie, out of the port it came in on, and admits it when it comes
    /// back with the cookie, signed over it; not from another address, not after two
    /// windows, not a stranger (BadKey first: no cookie for a wrong tag).
    #[test]
    fn with_cookies_the_controller_admits_a_join_only_with_a_fresh_one_for_its_address() {
        use switchml_core::auth::CookieJar;
        use switchml_core::time::{Duration, Instant};
        use switchml_core::wire::{CookiePacket, CookieRepr, JoinPacket, JoinRepr};

        let mut p = pipeline();
        let start = Instant::from_micros(1);
        p.set_cookie_check(Some(switchml_p4model::controller::CookieCheck {
            jar: CookieJar::new([7; 32]),
            now: start,
        }));
        let join = |cookie: u64| {
            let j = datagrams::join(7, 2, 4, (4, 4), 0x77, KEY);
            let mut r = JoinRepr::parse(&JoinPacket::new_unchecked(&j[..])).unwrap();
            r.cookie = cookie;
            let mut b = vec![0u8; r.buffer_len()];
            r.sign(KEY).emit(&mut JoinPacket::new_unchecked(&mut b[..]));
            b
        };
        let last = |p: &mut Pipeline, datagram: &[u8]| {
            let (port, f) = frame(datagram);
            let hops = exchange(p, port, &f);
            hops.last().map(|h| h.out.clone()).unwrap_or_default()
        };
        let out = last(&mut p, &join(0));
        let [(2, cookie)] = out.as_slice() else {
            panic!("{out:?}");
        };
        let c = CookieRepr::parse(&CookiePacket::new_unchecked(&cookie[TRANSPORT_LEN..])).unwrap();
        assert_eq!((c.job, c.rank, c.nonce), (7, 2, 0x77));
        let out = last(&mut p, &join(c.cookie));
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].1[TRANSPORT_LEN + 1], 0x11, "a JoinReply");
        // The same Join from host 3's address: its cookie names host 2's.
        let (_, f) = frame(&join(c.cookie));
        let mut moved = f.clone();
        moved[26..30].copy_from_slice(&host(3).source.ip);
        moved[24..26].fill(0);
        let sum = ipv4_checksum(&moved[14..34]);
        moved[24..26].copy_from_slice(&sum.to_be_bytes());
        let hops = exchange(&mut p, 3, &moved);
        let again = &hops.last().unwrap().out;
        assert_eq!(again[0].1[TRANSPORT_LEN + 1], 0x18, "a Cookie: {again:?}");
        // Two windows later the cookie is stale.
        p.set_controller_time(start + Duration::from_secs(61));
        let out = last(&mut p, &join(c.cookie));
        assert_eq!(out[0].1[TRANSPORT_LEN + 1], 0x18, "a Cookie: {out:?}");
        // A wrong tag gets BadKey, never a cookie.
        let mut forged = join(0);
        forged[40] ^= 1;
        let out = last(&mut p, &forged);
        assert_eq!(out[0].1[TRANSPORT_LEN + 1], 0x14);
    }

    /// `frame` as the controller sends it back, to be taken as from `port`.
    fn injected(port: u16, frame: &[u8]) -> Vec<u8> {
        let packet_out = PacketOut {
            port,
            forward: false,
        };
        [&packet_out.to_bytes()[..], frame].concat()
    }

    /// A Join comes to the pipeline from the CPU port only: on a host port it goes to the
    /// controller whatever its tag, and the pipeline answers only what comes back.
    #[test]
    fn the_pipeline_takes_a_join_only_from_the_cpu_port() {
        let mut p = pipeline();
        let j = datagrams::join(7, 0, 4, (4, 4), 0x55, KEY);
        let (port, f) = frame(&j);
        let mut out = vec![0u8; FRAME_OUT_LEN];
        assert!(matches!(
            p.process(port, &f, &mut out),
            Verdict::ToCpu { .. }
        ));
        let mut unsigned = j.clone();
        unsigned[28..44].fill(0);
        let (port, f) = frame(&unsigned);
        assert!(matches!(
            p.process(port, &f, &mut out),
            Verdict::ToCpu { .. }
        ));
        // Sent back by the controller: no key compared, the tag is the controller's.
        let back = injected(port, &f);
        assert!(matches!(
            p.process(p.cpu_port(), &back, &mut out),
            Verdict::Unicast { port: 0, .. }
        ));
        // A Status from the CPU port is never the pipeline's.
        let q = datagrams::status(7, 0, KEY);
        let (port, f) = frame(&q);
        let back = injected(port, &f);
        assert_eq!(
            p.process(p.cpu_port(), &back, &mut out),
            Verdict::Drop(DropReason::UnexpectedType)
        );
    }

    /// The table holds exactly the pairs the model's arithmetic accepts, with its lane:
    /// every (slot_count, slot_lo) of a lane inside the pool, and nothing else.
    #[test]
    fn lane_alignments_are_the_aligned_lanes_of_the_pool() {
        let table: Vec<(u16, u16, u16)> = lane_alignments(SLOTS).collect();
        let pool = SLOTS as u16;
        for c in 0..=pool + 1 {
            for lo in 0..=pool + 1 {
                let fits = c != 0 && lo + c <= pool && lo % c == 0;
                let entry = table.iter().find(|&&(tc, tlo, _)| (tc, tlo) == (c, lo));
                match entry {
                    Some(&(_, _, k)) => assert!(fits && k == lo / c, "{c} {lo} => {k}"),
                    None => assert!(!fits, "missing {c} {lo}"),
                }
            }
        }
        let text = cli_commands();
        assert!(text.contains("table_add lane_alignment lane_aligned 4 8 => 2\n"));
        assert_eq!(text.matches("lane_alignment").count(), table.len());
    }

    #[test]
    fn no_line_of_the_commands_is_a_comment() {
        for line in cli_commands().lines() {
            assert!(!line.trim_start().starts_with('#'), "{line}");
            assert!(
                !line.trim().is_empty(),
                "an empty line repeats the last command"
            );
        }
    }
}
