//! Ranks that keep their communicators open after their work until the test lets them go,
//! so that the switch's counters can be read before any rank's Leave arrives: a Leave that
//! comes after its run ended is refused, and counted as unauthorized (protocol.md §4.1).

use std::sync::{Condvar, Mutex};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use switchml_worker::{CommConfig, Communicator};

/// Where done ranks wait: how many arrived, and whether they may go.
#[derive(Default)]
pub struct Hold {
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Hold {
    /// A rank is done: count it, then wait until [`Hold::release`].
    pub fn arrive(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 += 1;
        self.changed.notify_all();
        while !s.1 {
            s = self.changed.wait(s).unwrap();
        }
    }

    /// Wait until `n` ranks have arrived, at most `limit`; return how many did.
    pub fn wait_for(&self, n: usize, limit: Duration) -> usize {
        let deadline = Instant::now() + limit;
        let mut s = self.state.lock().unwrap();
        while s.0 < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = self.changed.wait_timeout(s, left).unwrap().0;
        }
        s.0
    }

    /// Let every rank go, now and later.
    pub fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

/// Start one thread per configuration: connect, run `body`, arrive at `hold` (whatever
/// happened), and close the communicator once released.
pub fn spawn_ranks<'scope, R: Send + 'scope>(
    s: &'scope Scope<'scope, '_>,
    configs: Vec<CommConfig>,
    body: &'scope (impl Fn(&Communicator) -> Result<R, String> + Sync),
    hold: &'scope Hold,
) -> Vec<ScopedJoinHandle<'scope, Result<R, String>>> {
    configs
        .into_iter()
        .map(|config| {
            s.spawn(move || {
                let comm = Communicator::connect(&config)
                    .map_err(|e| format!("rank {}: connect: {e}", config.rank));
                let outcome = comm.as_ref().map_err(Clone::clone).and_then(body);
                hold.arrive();
                drop(comm);
                outcome
            })
        })
        .collect()
}
