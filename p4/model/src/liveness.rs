//! `liveness`: which ranks of each job's run the switch has heard, and the controller's
//! sweep that ends a run whose rank went silent or was refused (protocol.md §4.3).
//!
//! A data plane has no timer to fire, so the work is split as the reference's
//! `Run::sweep` and the endpoint's timer split it:
//!
//! - Data plane, register `heard`: one 64-bit cell per job table entry, bit `m` for member
//!   `m`. Every Contribution and Probe admitted to the run from a member sets its bit
//!   (`heard |= bit`, one `RegisterAction` in the first pass); the Join that makes a rank a
//!   member sets it too, and the Join that opens a run writes its bit alone (a new run
//!   starts with nobody heard but its opener, as the reference's).
//! - Controller: every `dead_after / QUIET_SWEEPS` it reads each job's `heard` cell and
//!   writes it 0 (BfRt or `simple_switch_CLI`, outside any pass), counts for each joined
//!   member that has not left the sweeps in a row it was not heard in (its own memory,
//!   reset when the run's session changes), and ends the run for a member quiet
//!   `QUIET_SWEEPS` times: it writes `session` 0 and injects the Abort `RankSilent` through
//!   the CPU port to the job's multicast group, as it does for `Shutdown`. It also sees
//!   every Join and its answer (Joins reach it through the CPU port, §4.2): a refusal of a
//!   rank of the job while the run gathers is noted, and the next sweep ends the run with
//!   `RankRefused` naming that rank.

use crate::register::{Hazard, Pass, Register};

/// Why a sweep ends a run (the reference's `run::Ending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// This member was quiet for `QUIET_SWEEPS` sweeps in a row.
    Silent(u16),
    /// The Join of this (global) rank was refused while the run gathered.
    Refused(u16),
}

/// The controller's memory of one job table entry's run.
#[derive(Debug, Clone, Copy)]
struct Watch {
    /// The run these counts are of.
    session: u32,
    /// Sweeps in a row each member was not heard in.
    quiet: [u8; 64],
    /// A rank whose Join was refused while this run gathered.
    refused: Option<u16>,
}

impl Watch {
    const NONE: Watch = Watch {
        session: 0,
        quiet: [0; 64],
        refused: None,
    };
}

/// Register `heard` and the controller's counts.
#[derive(Debug, Clone)]
pub struct Liveness {
    heard: Register<u64>,
    watch: Vec<Watch>,
}

impl Liveness {
    /// Make the register and the controller's memory for `jobs` job table entries.
    pub fn new(jobs: usize) -> Self {
        Liveness {
            heard: Register::new("heard", jobs, 0),
            watch: vec![Watch::NONE; jobs],
        }
    }

    /// A message of entry `index`'s run from `member` (data plane); `opens`: the Join that
    /// opened the run, whose bit starts the cell afresh.
    pub fn hear(
        &mut self,
        pass: &Pass,
        index: u16,
        member: u16,
        opens: bool,
    ) -> Result<(), Hazard> {
        let bit = 1u64 << (member & 63);
        self.heard.execute(pass, usize::from(index), |cell| {
            *cell = if opens { bit } else { *cell | bit };
        })
    }

    /// The controller saw the Join that opened a run of entry `index` (its answer names
    /// a new session): its counts start afresh, as the reference's run does. A session
    /// alone would not tell runs apart: a later run can draw the same one.
    pub fn opened(&mut self, index: u16) {
        if let Some(w) = self.watch.get_mut(usize::from(index)) {
            *w = Watch::NONE;
        }
    }

    /// The controller saw a Join of `rank` refused while entry `index`'s run `session`
    /// gathered (`joined` of its `world` members).
    pub fn refused(&mut self, index: u16, session: u32, rank: u16, joined: u64, world: u16) {
        let gathering = session != 0 && (joined.count_ones() as u16) < world;
        if let Some(w) = self.watch.get_mut(usize::from(index)).filter(|_| gathering) {
            if w.session != session {
                *w = Watch {
                    session,
                    ..Watch::NONE
                };
            }
            w.refused = w.refused.or(Some(rank));
        }
    }

    /// One sweep of entry `index`'s run `session` (controller; 0: no run), whose members
    /// `joined` have not all `left`: read and clear `heard`, count, and say why the run
    /// must end, if it must.
    pub fn sweep(&mut self, index: u16, session: u32, joined: u64, left: u64) -> Option<Ending> {
        let j = usize::from(index);
        let heard = self.heard.read(j).unwrap_or(0);
        let w = self.watch.get_mut(j)?;
        if session == 0 {
            return None;
        }
        if w.session != session {
            *w = Watch {
                session,
                ..Watch::NONE
            };
        }
        if let Some(rank) = w.refused {
            return Some(Ending::Refused(rank));
        }
        self.heard.write(j, 0);
        let mut silent = None;
        for (m, quiet) in w.quiet.iter_mut().enumerate() {
            let bit = 1u64 << m;
            if joined & bit == 0 {
                continue;
            }
            if (heard | left) & bit != 0 {
                *quiet = 0;
                continue;
            }
            *quiet = quiet.saturating_add(1);
            if *quiet >= switchml_core::switch::QUIET_SWEEPS && silent.is_none() {
                silent = Some(m as u16);
            }
        }
        silent.map(Ending::Silent)
    }
}
