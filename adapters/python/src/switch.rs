//! `Switch`: the software switch daemon on a thread of this process
//! (`switchml_switchd::RunningSwitch`), for tests and single-host training. Across hosts, run
//! the `switchml switch` command instead: it is the same daemon.

use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use switchml_switchd::{DaemonCounters, JobSpec, RunningSwitch, SwitchConfig, DEFAULT_JOB_SLOTS};

use crate::errors::{io_to_py, SwitchMLError};

/// A software switch serving jobs on a thread of this process.
///
/// jobs: a list, each job either "ID:WORLD[:SLOTS[:KEY]]" (KEY in hex, as for
/// `switchml switch --job`) or a tuple (id, world[, slots[, key]]); a job without a key
/// takes `SWITCHML_JOB_KEY`, else none: served so only on a loopback `bind` (the default;
/// only this host can reach it), refused on any other address unless its key is `none`
/// ("ID:WORLD:SLOTS:none", or 0 in a tuple), as `switchml switch` refuses it. bind: "host:port" (port 0: any free port).
/// drop_rate: the probability of losing each datagram, each way (seeded by seed).
/// pipeline: "reference" (the core's switch) or "p4-model" (the Rust twin of the P4
/// programs). Use as a context manager, or call stop().
#[pyclass(module = "switchml._switchml", frozen)]
pub struct Switch {
    inner: Mutex<Option<RunningSwitch>>,
    address: String,
    epoch: u32,
}

fn job_of(job: &Bound<'_, PyAny>) -> PyResult<JobSpec> {
    if let Ok(text) = job.extract::<String>() {
        return text.parse().map_err(PyValueError::new_err);
    }
    let fields: Vec<Bound<'_, PyAny>> = job.downcast::<PyTuple>()?.iter().collect();
    if !(2..=4).contains(&fields.len()) {
        return Err(PyValueError::new_err(
            "a job tuple is (id, world[, slots[, key]])",
        ));
    }
    Ok(JobSpec {
        id: fields[0].extract()?,
        world: fields[1].extract()?,
        slots: match fields.get(2) {
            Some(s) => s.extract()?,
            None => DEFAULT_JOB_SLOTS,
        },
        key: fields.get(3).map(|k| k.extract()).transpose()?,
    })
}

fn counters_dict<'py>(py: Python<'py>, c: &DaemonCounters) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("received", c.received)?;
    d.set_item("sent", c.sent)?;
    d.set_item("send_failures", c.send_failures)?;
    d.set_item("injected_losses", c.injected_losses)?;
    d.set_item("oversized", c.oversized)?;
    d.set_item("bad_source", c.bad_source)?;
    d.set_item("expired_runs", c.expired_runs)?;
    d.set_item("throttled", c.throttled)?;
    d.set_item("replies_limited", c.replies_limited)?;
    d.set_item("cookies", c.cookies)?;
    d.set_item("unknown_job", c.unknown_job)?;
    d.set_item("status_off", c.status_off)?;
    d.set_item("drops", c.total_drops())?;
    let jobs = PyDict::new(py);
    for j in &c.jobs {
        let job = PyDict::new(py);
        job.set_item("received", j.received)?;
        job.set_item("replies", j.replies)?;
        job.set_item("multicasts", j.multicasts)?;
        job.set_item("sent", j.sent)?;
        jobs.set_item(j.job, job)?;
    }
    d.set_item("jobs", jobs)?;
    d.set_item("switch", format!("{:?}", c.switch))?;
    Ok(d)
}

#[pymethods]
impl Switch {
    #[new]
    #[pyo3(signature = (jobs, *, bind="127.0.0.1:0", drop_rate=0.0, seed=1, pipeline="reference"))]
    fn new(
        jobs: Vec<Bound<'_, PyAny>>,
        bind: &str,
        drop_rate: f64,
        seed: u64,
        pipeline: &str,
    ) -> PyResult<Switch> {
        let bind = bind
            .parse()
            .map_err(|e| PyValueError::new_err(format!("bind {bind:?}: {e}")))?;
        let jobs = jobs.iter().map(job_of).collect::<PyResult<Vec<_>>>()?;
        let mut config = SwitchConfig::new(bind, jobs);
        config.drop_rate = drop_rate;
        config.seed = seed;
        config.pipeline = pipeline.parse().map_err(PyValueError::new_err)?;
        // A keyless job on loopback is reachable from this host only: the in-process
        // switch of a test or a notebook. Anywhere else a stranger could join it.
        config.allow_keyless = bind.ip().is_loopback();
        let switch = RunningSwitch::start(&config).map_err(io_to_py)?;
        Ok(Switch {
            address: switch.addr().to_string(),
            epoch: switch.epoch(),
            inner: Mutex::new(Some(switch)),
        })
    }

    /// The address it listens on, "host:port" (what SWITCHML_SWITCH takes).
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// The port it listens on.
    #[getter]
    fn port(&self) -> u16 {
        self.address
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// Its epoch, drawn at start: workers of a restarted switch see a new one.
    #[getter]
    fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Whether the daemon thread is serving.
    #[getter]
    fn running(&self) -> bool {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().is_some_and(RunningSwitch::is_running)
    }

    /// Return the counters (at most 50 ms old): received, sent, send_failures,
    /// injected_losses, oversized, bad_source, expired_runs, throttled, replies_limited,
    /// status_off, cookies, unknown_job, drops, per-job counters under
    /// "jobs", and the switch's own counters as text under "switch".
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let switch = inner
            .as_ref()
            .ok_or_else(|| SwitchMLError::new_err("the switch is stopped"))?;
        counters_dict(py, &switch.counters())
    }

    /// Stop serving (the GIL released) and return the final counters; None if it was
    /// already stopped.
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let switch = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        match switch {
            None => Ok(None),
            Some(s) => {
                let counters = py.allow_threads(move || s.stop()).map_err(io_to_py)?;
                counters_dict(py, &counters).map(Some)
            }
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.stop(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Switch(address='{}', epoch={})", self.address, self.epoch)
    }
}
