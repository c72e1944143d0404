//! Do `tracing` spans per job/rank/lane earn their cost on the data path (issue 26, item 6)?
//! Per datagram, the work a switch must do anyway (adding 256 int32 values) against that
//! work plus: a disabled `log::trace!` (the packet trace when off), a `tracing` span
//! entered per datagram and filtered out, and one recorded by a `fmt` subscriber.
//! Printed as ratios to the bare work, all from this one run:
//! `cargo bench -p switchml-switchd --bench trace_cost`.

use std::hint::black_box;
use std::time::Instant;

const DATAGRAMS: u32 = 1_000_000;

fn add(x: &mut [i32]) {
    for v in x.iter_mut() {
        *v = v.wrapping_add(black_box(3));
    }
}

fn time(mut each: impl FnMut(u32)) -> f64 {
    let t = Instant::now();
    for i in 0..DATAGRAMS {
        each(i);
    }
    t.elapsed().as_secs_f64()
}

fn main() {
    let mut values = vec![0i32; 256];
    let bare = time(|_| add(&mut values));
    log::set_max_level(log::LevelFilter::Info);
    let logged = time(|i| {
        log::trace!(target: "switchml::packet", "{i}");
        add(&mut values);
    });
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("info")
        .with_writer(std::io::sink)
        .finish();
    let (filtered, recorded) = tracing::subscriber::with_default(subscriber, || {
        let filtered = time(|i| {
            let span = tracing::trace_span!("lane", job = 1, rank = 2, lane = i % 4);
            let _in = span.enter();
            add(&mut values);
        });
        let recorded = time(|i| {
            let span = tracing::info_span!("lane", job = 1, rank = 2, lane = i % 4);
            let _in = span.enter();
            add(&mut values);
        });
        (filtered, recorded)
    });
    let ns = bare / f64::from(DATAGRAMS) * 1e9;
    println!("per datagram, 256 int32 additions: {ns:.0} ns = 1.00");
    println!("  + log::trace! turned off:          {:.2}", logged / bare);
    println!(
        "  + a tracing span, filtered out:    {:.2}",
        filtered / bare
    );
    println!(
        "  + a tracing span, recorded:        {:.2}",
        recorded / bare
    );
}
