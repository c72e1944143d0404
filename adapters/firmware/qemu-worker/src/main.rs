//! A switchml-rs worker rank as a firmware image, for QEMU's `mps2-an386` (Cortex-M4F):
//! boots, brings the board's LAN9118 up with a static address, joins the job at the switch
//! daemon, contributes its tensor, receives the sum, checks it against the exact sum of
//! every rank's input, and reports through semihosting with an exit status (0: the result
//! checked out).
//!
//! The settings come from the semihosting command line (`args.rs`). The protocol is
//! `switchml-core`'s worker, unchanged; the network is `switchml-firmware`'s poll loop over
//! `switchml-lan9118`. This file is glue: start-up, the tensor, the report.
#![no_std]
#![no_main]

mod args;
mod data;
mod stack;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use switchml_core::quant::{Elements, Op};
use switchml_core::time::{Duration, Instant};
use switchml_core::worker::{Config, Event, Worker};
use switchml_firmware::{Buffers, NetConfig, Node, Storage, TickClock, TickSource};
use switchml_lan9118::{FreeRunCounter, Lan9118, Mmio};

use args::{Args, Dtype};

/// The most elements a tensor may have: 1 MiB of i32 or f32.
const MAX_ELEMENTS: usize = 256 * 1024;
/// The most slots a lane may drive (`window=` at most this).
const SLOTS: usize = 64;
/// UDP ring sizes: datagrams and bytes per direction.
const PACKETS: usize = 64;
const RING_BYTES: usize = 64 * 1100;
/// One datagram: the header and up to 362 values (a 1500-byte MTU).
const DATAGRAM: usize = 1500;
/// The MAC address if the board's EEPROM has none (QEMU loads one from `-nic`).
const FALLBACK_MAC: [u8; 6] = [0x02, 0x00, 0x5E, 0xC2, 0xE7, 0x01];

/// The NIC's free-running counter as the firmware's tick source.
struct NicTicks(FreeRunCounter<Mmio>);

impl TickSource for NicTicks {
    const HZ: u32 = FreeRunCounter::<Mmio>::HZ;
    fn ticks(&mut self) -> u32 {
        self.0.ticks()
    }
}

#[entry]
fn main() -> ! {
    // cortex-m-rt turns these into `&'static mut`s, once.
    static mut STORAGE: Storage<'static, PACKETS> = Storage::new();
    static mut BUFFERS: Buffers<RING_BYTES, DATAGRAM> = Buffers::new();
    static mut TENSOR: [u32; MAX_ELEMENTS] = [0; MAX_ELEMENTS];
    static mut INPUT: [u32; MAX_ELEMENTS] = [0; MAX_ELEMENTS];
    static mut CMDLINE: [u8; 512] = [0; 512];

    stack::paint();
    let line = command_line(CMDLINE);
    let args = match Args::parse(line) {
        Ok(a) => a,
        Err(word) => fail(format_args!("bad argument {word:?} in {line:?}")),
    };
    let (Some(rank), Some(world), Some(job), Some(switch)) =
        (args.rank, args.world, args.job, args.switch)
    else {
        fail(format_args!("rank=, world=, job= and switch= are required"))
    };
    if args.elements > MAX_ELEMENTS || usize::from(args.window) > SLOTS {
        fail(format_args!(
            "elements= at most {MAX_ELEMENTS}, window= at most {SLOTS}"
        ));
    }

    // SAFETY: the MPS2's LAN9118 window; this handle is its only writer, the alias only
    // reads the free-running counter.
    let (regs, counter) = unsafe {
        let regs = Mmio::new(Mmio::MPS2_BASE);
        let counter = regs.alias();
        (regs, counter)
    };
    let mut clock = TickClock::new(NicTicks(FreeRunCounter::new(counter)));
    let boot_ticks = clock.source().ticks();
    let nic = match Lan9118::new(regs, FALLBACK_MAC) {
        Ok(nic) => nic,
        Err(e) => fail(format_args!("LAN9118: {e}")),
    };
    let mac = nic.mac_address();
    let nonce = args.nonce.unwrap_or_else(|| boot_nonce(boot_ticks, mac));
    let net = NetConfig {
        mac,
        address: args.ip,
        gateway: Some(args.gateway),
        port: args.port,
        switch,
        seed: u64::from(nonce) << 32 | u64::from(boot_ticks),
    };
    let mut node = Node::new(nic, clock, &net, STORAGE, BUFFERS);

    let config = Config {
        window: args.window,
        count: args.count,
        rto: Duration::from_millis(args.rto_ms.max(1)),
        max_rto: Duration::from_millis((args.rto_ms * 10).max(200)),
        join_timeout: Duration::from_secs(args.timeout_s.max(1)),
        key: args.key,
        nonce,
        ..Config::new(job, rank, world)
    };
    let mut worker: Worker<Elements<'static>, SLOTS, 2> = match Worker::new(config) {
        Ok(w) => w,
        Err(e) => fail(format_args!("worker config: {e}")),
    };
    hprintln!(
        "qemu-worker: rank {}/{} of job {}, {} × {:?} to {}:{} from {} (mac {:02x?}, nonce {:#x})",
        rank,
        world,
        job,
        args.elements,
        args.dtype,
        switch.0,
        switch.1,
        args.ip.0,
        mac,
        nonce
    );

    let start = node.now();
    let deadline = start + Duration::from_secs(args.timeout_s);
    // The input, kept to restore the tensor between iterations at memcpy speed (the host
    // workers restore theirs likewise), outside the timed all-reduces.
    let input = &mut INPUT[..args.elements];
    fill(input, &args, rank, world);
    let tensor_words = &mut TENSOR[..args.elements];
    tensor_words.copy_from_slice(input);
    let mut tensor = view(tensor_words, args.dtype);
    let mut timed = Duration::ZERO;
    for i in 0..args.iterations.max(1) {
        if i > 0 {
            tensor = restore(tensor, input);
        }
        let (result, took) = allreduce(&mut node, &mut worker, tensor, deadline, start);
        hprintln!("qemu-worker: iteration {}: {}", i + 1, took);
        // The first all-reduce also waits for every rank to join: time the others.
        if i > 0 || args.iterations <= 1 {
            timed = timed + took;
        }
        tensor = result;
    }
    // Tell the switch this rank is done, and give the Leave a few rounds to go out.
    worker.leave();
    let flush_until = node.now() + Duration::from_millis(50);
    while node.poll(&mut worker) < flush_until {}

    let timed_iterations = args.iterations.saturating_sub(1).max(1);
    let ok = report(tensor, &args, world, timed, timed_iterations);
    let stats = worker.stats();
    hprintln!(
        "qemu-worker: {} datagrams sent, {} retransmissions, srtt {:?}; node {:?}; nic {:?}",
        stats.sent,
        stats.retransmissions,
        worker.smoothed_rtt().map(|d| d.total_micros()),
        node.stats(),
        node.device().counters()
    );
    hprintln!(
        "qemu-worker: stack high-water mark {} bytes",
        stack::high_water()
    );
    if ok {
        hprintln!("qemu-worker: PASS");
        debug::exit(debug::EXIT_SUCCESS);
    } else {
        hprintln!("qemu-worker: FAIL");
        debug::exit(debug::EXIT_FAILURE);
    }
    halt()
}

/// All-reduce `tensor` once; return it summed and the time from submission to result.
fn allreduce(
    node: &mut Node<'static, Lan9118<Mmio>, TickClock<NicTicks>>,
    worker: &mut Worker<Elements<'static>, SLOTS, 2>,
    tensor: Elements<'static>,
    deadline: Instant,
    start: Instant,
) -> (Elements<'static>, Duration) {
    let submitted = node.now();
    if let Err(e) = worker.submit(submitted, tensor, Op::Sum) {
        fail(format_args!("submit: {:?}", e.kind));
    }
    loop {
        let now = node.poll(worker);
        if now > deadline {
            fail(format_args!(
                "no result after {}: {:?}, node {:?}",
                now - start,
                worker.stats(),
                node.stats()
            ));
        }
        match worker.poll_event() {
            Some(Event::Joined { epoch }) => {
                hprintln!(
                    "qemu-worker: joined (epoch {:#010x}) after {}",
                    epoch,
                    now - start
                )
            }
            Some(Event::Done { buf, result, .. }) => match result {
                Ok(()) => return (buf, now - submitted),
                Err(e) => fail(format_args!("all-reduce failed: {e}")),
            },
            Some(Event::Failed(e)) => fail(format_args!("worker failed: {e}")),
            Some(Event::Redirected { shard, shards }) => {
                hprintln!(
                    "qemu-worker: the switch has {} shards; joining shard {}",
                    shards,
                    shard
                );
                node.move_to_shard(shard);
            }
            None => {}
        }
    }
}

/// Put this rank's input back into a tensor the last all-reduce summed in place.
fn restore(tensor: Elements<'static>, input: &[u32]) -> Elements<'static> {
    match tensor {
        Elements::I32(t) => {
            for (v, &w) in t.iter_mut().zip(input) {
                *v = w as i32;
            }
            Elements::I32(t)
        }
        Elements::F32(t) => {
            for (v, &w) in t.iter_mut().zip(input) {
                *v = f32::from_bits(w);
            }
            Elements::F32(t)
        }
        other => other,
    }
}

/// Fill `words` with this rank's input, as `switchml worker` would, as bit patterns of the
/// element type.
fn fill(words: &mut [u32], args: &Args, rank: u16, world: u16) {
    for (i, w) in words.iter_mut().enumerate() {
        *w = match args.dtype {
            Dtype::I32 => data::i32_at(args.seed, rank, world, i) as u32,
            Dtype::F32 => data::f32_at(args.seed, rank, i).to_bits(),
        };
    }
}

/// View `words` as the worker's tensor of `dtype`.
fn view(words: &'static mut [u32], dtype: Dtype) -> Elements<'static> {
    match dtype {
        Dtype::I32 => Elements::I32(as_i32(words)),
        Dtype::F32 => Elements::F32(as_f32(words)),
    }
}

/// Check the result against the exact sum and print the figures; return whether it holds.
fn report(result: Elements<'_>, args: &Args, world: u16, timed: Duration, n: u32) -> bool {
    let secs = timed.total_micros().max(1) as f64 / 1e6;
    let rate = args.elements as f64 * f64::from(n) / secs;
    hprintln!(
        "qemu-worker: {} all-reduce(s) of {} elements in {} ({} elements/s)",
        n,
        args.elements,
        timed,
        rate as u64
    );
    let bits = match &result {
        Elements::I32(y) => data::cksum(y.iter().map(|&v| v as u32)),
        Elements::F32(y) => data::cksum(y.iter().map(|v| v.to_bits())),
        _ => 0,
    };
    hprintln!("qemu-worker: result cksum {} {}", bits, args.elements * 4);
    match result {
        Elements::I32(y) => match data::check_i32(y, args.seed, world) {
            None => {
                hprintln!("qemu-worker: i32 result exact ({} elements)", y.len());
                true
            }
            Some(i) => {
                hprintln!("qemu-worker: i32 result wrong at element {}: {}", i, y[i]);
                false
            }
        },
        Elements::F32(y) => {
            let (max_error, bad) = data::check_f32(y, args.seed, world);
            match bad {
                None => hprintln!(
                    "qemu-worker: f32 result within bound (max error {:e})",
                    max_error
                ),
                Some(i) => hprintln!(
                    "qemu-worker: f32 result out of bound at element {}: {}",
                    i,
                    y[i]
                ),
            }
            bad.is_none()
        }
        _ => false,
    }
}

fn as_i32(words: &'static mut [u32]) -> &'static mut [i32] {
    // SAFETY: u32 and i32 have the same size, alignment and validity.
    unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len()) }
}

fn as_f32(words: &'static mut [u32]) -> &'static mut [f32] {
    // SAFETY: u32 and f32 have the same size and alignment, and every bit pattern is an f32.
    unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len()) }
}

/// A nonce when the command line gives none: the counter at boot mixed with the MAC.
fn boot_nonce(ticks: u32, mac: [u8; 6]) -> u32 {
    let m = u32::from_le_bytes([mac[2], mac[3], mac[4], mac[5]]);
    let n = ticks.wrapping_mul(0x9E37_79B9) ^ m.rotate_left(16);
    n.max(1)
}

/// Read the semihosting command line into `buf`.
fn command_line(buf: &'static mut [u8; 512]) -> &'static str {
    let mut block = [buf.as_mut_ptr() as usize, buf.len() - 1];
    // SAFETY: SYS_GET_CMDLINE writes at most block[1] bytes and a NUL into `buf`, and the
    // length into `block`, both of which outlive the call.
    let status = unsafe {
        cortex_m_semihosting::syscall1(
            cortex_m_semihosting::nr::GET_CMDLINE,
            block.as_mut_ptr() as usize,
        )
    };
    if status != 0 {
        fail(format_args!("no semihosting command line"));
    }
    // SAFETY: the host wrote the length into the block.
    let len = unsafe { core::ptr::read_volatile(&block[1]) }.min(buf.len());
    match core::str::from_utf8(&buf[..len]) {
        Ok(s) => s,
        Err(_) => fail(format_args!("the command line is not UTF-8")),
    }
}

fn fail(why: core::fmt::Arguments<'_>) -> ! {
    hprintln!("qemu-worker: FAIL: {}", why);
    debug::exit(debug::EXIT_FAILURE);
    halt()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    hprintln!("qemu-worker: panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    halt()
}

/// Stop here: semihosting's exit ends QEMU, so this only runs under a debugger that
/// ignores it.
fn halt() -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}
