//! Rust log records into Python's `logging` (logger names are the Rust targets, e.g.
//! `switchml_ring`), through `pyo3-log`.
//!
//! Not `pyo3_log::init()` as such: that logger takes the GIL on the thread that logs, and
//! the lanes, the switch daemon and the fallback log from their own threads while a
//! Python thread may hold the GIL and wait for them (a submission, `stats()`, a switch
//! starting up): a deadlock. So records are queued here, never blocking, and one thread of
//! ours takes the GIL to hand them to `pyo3-log`, which applies the Python loggers'
//! levels (cached; `switchml.reset_logging()` re-reads them). Records below `info` are not
//! even formatted unless `RUST_LOG` names a lower level (`debug`, `trace`): the lanes'
//! debug records cost on the data path.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Mutex, OnceLock};

use log::{Level, LevelFilter, Log, Metadata, Record};
use pyo3::prelude::*;
use pyo3_log::{Caching, Logger, ResetHandle};

/// Records waiting for the GIL; beyond this many, new ones are dropped rather than block
/// a lane.
const QUEUE: usize = 4096;

/// One record, owned, to cross to the thread that logs it.
struct Owned {
    level: Level,
    target: String,
    message: String,
}

/// The `log` facade's logger: queues each enabled record.
struct Queued {
    sender: SyncSender<Owned>,
    filter: LevelFilter,
}

impl Log for Queued {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= self.filter
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) || STOPPED.load(Ordering::Relaxed) {
            return;
        }
        let owned = Owned {
            level: record.level(),
            target: record.target().to_owned(),
            message: record.args().to_string(),
        };
        // A full queue drops the record: a lane must never wait for Python.
        if let Err(TrySendError::Disconnected(_)) = self.sender.try_send(owned) {
            STOPPED.store(true, Ordering::Relaxed);
        }
    }

    fn flush(&self) {}
}

/// Set at interpreter exit: no thread of ours may take the GIL after finalization starts
/// (Python 3.11 ends such a thread with `pthread_exit`, which aborts through Rust frames).
static STOPPED: AtomicBool = AtomicBool::new(false);
/// Held by the drain thread while it hands one record to Python, so that `stop_logging`
/// can wait for that record before finalization begins.
static HANDING: Mutex<()> = Mutex::new(());
static RESET: OnceLock<ResetHandle> = OnceLock::new();

/// Hand every queued record to Python's `logging`, until the queue closes or Python exits.
fn drain(records: Receiver<Owned>, logger: Logger) {
    while let Ok(r) = records.recv() {
        let _handing = HANDING.lock().unwrap_or_else(|p| p.into_inner());
        if STOPPED.load(Ordering::SeqCst) {
            return;
        }
        logger.log(
            &Record::builder()
                .level(r.level)
                .target(&r.target)
                .args(format_args!("{}", r.message))
                .build(),
        );
    }
}

/// Install the bridge (once per process); later calls do nothing.
pub fn install(py: Python<'_>) -> PyResult<()> {
    if RESET.get().is_some() {
        return Ok(());
    }
    // Levels come from Python's loggers, cached (pyo3-log's default, re-read on reset).
    let logger = Logger::new(py, Caching::LoggersAndLevels)?;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|level| level.trim().parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::Info);
    let logger = logger.filter(filter);
    let reset = logger.reset_handle();
    let (sender, records) = sync_channel(QUEUE);
    if log::set_boxed_logger(Box::new(Queued { sender, filter })).is_err() {
        return Ok(()); // another library in this process owns the `log` facade
    }
    log::set_max_level(filter);
    std::thread::Builder::new()
        .name("switchml-log".into())
        .spawn(move || drain(records, logger))
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    let _ = RESET.set(reset);
    let atexit = py.import("atexit")?;
    atexit.call_method1("register", (wrap_pyfunction!(stop_logging, py)?,))?;
    Ok(())
}

/// Stop handing Rust log records to Python (registered with `atexit`): after it returns,
/// no thread of ours takes the GIL again.
#[pyfunction]
pub fn stop_logging(py: Python<'_>) {
    STOPPED.store(true, Ordering::SeqCst);
    // The record being handed over, if any, needs the GIL to finish: wait without it.
    py.allow_threads(|| drop(HANDING.lock().unwrap_or_else(|p| p.into_inner())));
}

/// Re-read the levels of Python's loggers (after `setLevel`), for records from now on.
#[pyfunction]
pub fn reset_logging() {
    if let Some(reset) = RESET.get() {
        reset.reset();
    }
}
