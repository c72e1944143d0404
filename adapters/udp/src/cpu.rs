//! The CPU time a thread has used, for the counters that report it.

use std::time::Duration;

/// CPU time (user + system) the calling thread has used, from getrusage(2).
pub fn thread_cpu() -> Duration {
    // SAFETY: an all-zero rusage is valid, and getrusage writes one into the live struct
    // we pass; RUSAGE_THREAD is Linux's, as is every socket option this crate uses.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut u);
        u
    };
    let tv =
        |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
