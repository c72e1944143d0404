//! Which sockets the data plane's frames go through (`--io`): the AF_PACKET socket alone,
//! one frame per system call as the dialect switch always did, or AF_XDP sockets beside it
//! (issue 30) — switchml-xdp's program steers IPv4/UDP frames to the dialect's ports
//! (0xBEE0–0xBEEF) into one socket per receive queue, drained a batch at a time and answered
//! into the same queue's TX ring with one kick per batch.
//!
//! The AF_PACKET socket stays open beside them: ARP requests for the switch's address, UDP
//! to other ports, IPv4 with options and fragments are passed to the kernel by the program,
//! and an AF_PACKET socket sees every frame the kernel is handed, so the engine still
//! answers and counts them. A frame the program redirects never reaches the kernel, so no
//! frame is seen twice; each reply goes out of the socket its request came in on, once. A
//! queue without a socket (one that failed to open) has no port range in the program's
//! map, so its frames are passed and read from the AF_PACKET socket too.

use std::io;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchml_udp::socket::wait_any;
use switchml_xdp::iface::MAX_QUEUES;
use switchml_xdp::{Attached, FrameQueue};

use crate::dataplane::{Command, Engine, Slot};
use crate::frame::SWITCH_PORTS;
use crate::raw::RawSocket;
use crate::stats::{PathCounters, Stats};

/// Frames taken from one AF_XDP socket before they are answered (and the TX kicked).
const BATCH: usize = 64;
/// Batches drained from one socket before turning to the next.
const ROUNDS: usize = 16;
/// Room for one received frame: the largest the XDP program steers.
const FRAME_ROOM: usize = switchml_xdp::xsk::FRAME_SIZE as usize;
/// How long [`Frames::serve`] waits for a frame before it returns (to look at the stop
/// flag and publish the counters): the AF_PACKET socket's receive timeout too.
pub const WAIT: Duration = Duration::from_millis(50);

/// The data plane's sockets.
pub struct Frames {
    raw: RawSocket,
    xdp: Vec<FrameQueue>,
    /// One received frame, from the AF_PACKET socket.
    buf: Vec<u8>,
    /// A batch of frames copied out of an AF_XDP socket's UMEM (so that the engine's
    /// replies can be pushed into the same socket while they are read).
    batch: Vec<u8>,
    lens: Vec<usize>,
    counters: PathCounters,
}

impl Frames {
    /// The AF_PACKET socket `raw` alone.
    pub fn packet(raw: RawSocket) -> Frames {
        Frames {
            raw,
            xdp: Vec::new(),
            buf: vec![0; 9216],
            batch: Vec::new(),
            lens: Vec::new(),
            counters: PathCounters::default(),
        }
    }

    /// AF_XDP sockets on every receive queue of `iface` beside `raw`, where the interface
    /// takes an XDP program in native mode; `raw` alone otherwise, with a warning that
    /// says why. Opened in the calling thread's network namespace.
    pub fn xdp(raw: RawSocket, iface: &str) -> Frames {
        let mut frames = Frames::packet(raw);
        let attached = match Attached::attach(iface) {
            Ok(a) => a,
            Err(e) => {
                log::warn!("p4app switch: AF_XDP: {e}; on its AF_PACKET socket instead");
                return frames;
            }
        };
        for queue in 0..attached.rx_queues() {
            match FrameQueue::open(&attached, queue, SWITCH_PORTS) {
                Ok(q) => frames.xdp.push(q),
                Err(e) => log::warn!(
                    "p4app switch: AF_XDP: {e}; frames on {iface} queue {queue} reach the \
                     AF_PACKET socket instead"
                ),
            }
        }
        match frames.xdp.first().map(FrameQueue::mode) {
            Some(mode) => log::info!(
                "p4app switch: AF_XDP on {iface}, {} of {} receive queue(s) ({mode:?} mode); \
                 ARP and other frames on the AF_PACKET socket",
                frames.xdp.len(),
                attached.rx_queues()
            ),
            None => log::warn!(
                "p4app switch: AF_XDP: no queue of {iface} opened; on its AF_PACKET socket instead"
            ),
        }
        frames.batch.reserve(BATCH * FRAME_ROOM);
        frames
    }

    /// The AF_XDP sockets opened: 0 on the AF_PACKET socket alone.
    pub fn xdp_queues(&self) -> usize {
        self.xdp.len()
    }

    /// The interface's MAC.
    pub fn mac(&self) -> [u8; 6] {
        self.raw.mac()
    }

    /// What went through which socket so far.
    pub fn counters(&self) -> PathCounters {
        self.counters
    }

    /// Wait up to [`WAIT`] for frames and hand every one that is ready to `engine`, its
    /// replies to the socket it came from; `before` is called after frames are read and
    /// before the first of them is handled (the control plane's commands, sent before the
    /// reply that let a client send, are then in place before its frames).
    pub fn serve(
        &mut self,
        engine: &mut Engine<'_>,
        out: &mut [u8],
        before: &mut dyn FnMut(&mut Engine<'_>),
    ) -> io::Result<()> {
        if self.xdp.is_empty() {
            // One frame per call, waiting in the socket's timeout: the path as it was.
            let got = self.raw.recv(&mut self.buf);
            before(engine);
            if let Some(n) = got? {
                self.handle_packet(n, engine, out);
            }
            return Ok(());
        }
        let mut fds = [-1; MAX_QUEUES as usize + 1];
        fds[0] = self.raw.fd();
        for (fd, q) in fds[1..].iter_mut().zip(&self.xdp) {
            *fd = q.fd();
        }
        // Which one is ready does not matter: a look at an empty ring costs a load.
        wait_any(fds, WAIT)?;
        for i in 0..self.xdp.len() {
            self.drain_queue(i, engine, out, before);
        }
        for _ in 0..BATCH {
            let Some(n) = self.raw.try_recv(&mut self.buf)? else {
                break;
            };
            before(engine);
            self.handle_packet(n, engine, out);
        }
        Ok(())
    }

    /// Hand the frame of `wire_len` bytes in `buf` (from the AF_PACKET socket) to `engine`.
    fn handle_packet(&mut self, wire_len: usize, engine: &mut Engine<'_>, out: &mut [u8]) {
        let Frames {
            raw, buf, counters, ..
        } = self;
        counters.received_af_packet += 1;
        let frame = &buf[..wire_len.min(buf.len())];
        engine.handle(frame, wire_len, out, &mut |f| {
            raw.send(f)?;
            counters.sent_af_packet += 1;
            Ok(())
        });
    }

    /// Take batches from AF_XDP socket `i` until it is empty (at most [`ROUNDS`]),
    /// answering each batch into its TX ring with one kick.
    fn drain_queue(
        &mut self,
        i: usize,
        engine: &mut Engine<'_>,
        out: &mut [u8],
        before: &mut dyn FnMut(&mut Engine<'_>),
    ) {
        let Frames {
            xdp,
            batch,
            lens,
            counters,
            ..
        } = self;
        let Some(q) = xdp.get_mut(i) else {
            return;
        };
        for _ in 0..ROUNDS {
            batch.clear();
            lens.clear();
            let n = q.receive(BATCH, |frame| {
                batch.extend_from_slice(frame);
                lens.push(frame.len());
            });
            if n == 0 {
                break;
            }
            counters.received_af_xdp += lens.len() as u64;
            before(engine);
            let mut at = 0;
            for &len in lens.iter() {
                let frame = &batch[at..at + len];
                at += len;
                engine.handle(frame, len, out, &mut |f| match q.push(f) {
                    true => {
                        counters.sent_af_xdp += 1;
                        Ok(())
                    }
                    false => Err(io::ErrorKind::WouldBlock.into()),
                });
            }
            if let Err(e) = q.kick_tx() {
                log::debug!("p4app switch: AF_XDP send on queue {}: {e}", q.queue());
            }
            if n < BATCH {
                break;
            }
        }
    }
}

/// The data-plane thread: serve `frames` until `stop`, applying `commands` before the
/// frames read are handled and publishing the counters into `stats` after them.
pub fn run(
    mut frames: Frames,
    ip: Ipv4Addr,
    slots: usize,
    commands: Receiver<Command>,
    stats: Arc<Mutex<Stats>>,
    stop: Arc<AtomicBool>,
) {
    let mut slots = vec![Slot::EMPTY; slots];
    let mut engine = Engine::new(&mut slots, frames.mac(), ip);
    let mut out = vec![0u8; 9216];
    let mut apply = |engine: &mut Engine<'_>| {
        while let Ok(c) = commands.try_recv() {
            engine.apply(c);
        }
    };
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = frames.serve(&mut engine, &mut out, &mut apply) {
            log::error!("p4app switch: receive failed: {e}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if let Ok(mut s) = stats.lock() {
            *s = engine.stats();
            s.paths = frames.counters();
        }
    }
}
