//! `Communicator`: a worker's connection to a job at the switch, configured from keyword
//! arguments over the environment (`RANK`, `WORLD_SIZE`, `SWITCHML_SWITCH` or
//! `MASTER_ADDR`, `SWITCHML_JOB`, `SWITCHML_JOB_KEY`, ...) over a TOML file over the
//! defaults: `switchml_worker::Settings`'s order, unchanged.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use switchml_worker::{Communicator as UdpCommunicator, SettingValue, Settings};

use crate::collectives;
use crate::errors::{to_py, SwitchMLError};
use crate::tensor::{self, parse_op, Dtype, Handle};

/// A worker's connection to a job at the switch (the Rust `switchml_worker::Communicator`).
///
/// Every keyword is a setting of `switchml.SETTINGS` (the Rust `Settings`' one list: rank,
/// world_size, switch, job, key, lanes, window, count, timeouts, fallback_addr,
/// non_finite, ...), an int or a string; one left out comes from the environment (`RANK`,
/// `WORLD_SIZE`, `SWITCHML_<NAME>`, ...), else from the TOML file `config_file` (or
/// `SWITCHML_CONFIG`), else from the defaults. An unknown keyword is a `ConfigError`
/// naming the settings. The constructor returns once every rank has joined (the GIL
/// released meanwhile), or, with a fallback address, once the switch has failed to serve
/// the job: then every tensor goes over the host ring, and `stats()` and
/// `fallback_reason` say so.
#[pyclass(module = "switchml._switchml", subclass, frozen)]
pub struct Communicator {
    inner: Mutex<Option<Arc<UdpCommunicator>>>,
    /// Tensors all-reduced through this object, each counted once (the lanes count a
    /// tensor once per lane that carries a part of it).
    tensors: AtomicU64,
    /// Byte broadcasts and all-gathers (`broadcast_bytes`, `allgather_bytes`).
    byte_collectives: AtomicU64,
}

impl Communicator {
    /// Return the connection, or raise if it was closed.
    fn get(&self) -> PyResult<Arc<UdpCommunicator>> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| SwitchMLError::new_err("the communicator is closed"))
    }
}

/// The text of one keyword setting, as its environment variable would hold it: an int in
/// decimal (a key in hex), a string as it is.
fn setting_text(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name}: expected an int or a string"
        )));
    }
    if let Ok(n) = value.extract::<u64>() {
        return Ok(if name == "key" {
            format!("{n:x}")
        } else {
            n.to_string()
        });
    }
    value
        .extract::<String>()
        .map_err(|_| PyTypeError::new_err(format!("{name}: expected an int or a string")))
}

#[pymethods]
impl Communicator {
    #[new]
    #[pyo3(signature = (*, config_file=None, **settings))]
    fn new(
        py: Python<'_>,
        config_file: Option<PathBuf>,
        settings: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Communicator> {
        // Every keyword is a setting of the one list (`Settings::NAMES`), read as its
        // environment variable is: no second list of knobs here.
        let mut pairs = Vec::new();
        for (name, value) in settings.into_iter().flatten() {
            let name: String = name.extract()?;
            if value.is_none() {
                continue;
            }
            let text = setting_text(&name, &value)?;
            pairs.push((name, text));
        }
        let args = Settings::from_pairs(pairs.iter().map(|(n, t)| (n.as_str(), t.as_str())))
            .map_err(to_py)?;
        let config = args
            .layered(config_file.as_deref(), |name| std::env::var(name).ok())
            .and_then(|s| s.config())
            .map_err(to_py)?;
        let comm = py
            .allow_threads(|| UdpCommunicator::connect(&config))
            .map_err(to_py)?;
        Ok(Communicator {
            inner: Mutex::new(Some(Arc::new(comm))),
            tensors: AtomicU64::new(0),
            byte_collectives: AtomicU64::new(0),
        })
    }

    /// All-reduce a writable, C-contiguous buffer in place, zero-copy, the GIL released.
    ///
    /// dtype is "f32", "i32", "f16" or "bf16" (the two 16-bit types as a uint16 buffer);
    /// op is "sum" or "average". `switchml.Communicator.allreduce` takes NumPy arrays and
    /// torch tensors and calls this.
    #[pyo3(signature = (buffer, dtype, op="sum"))]
    fn allreduce_buffer(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        dtype: &str,
        op: &str,
    ) -> PyResult<()> {
        let (dtype, op) = (Dtype::parse(dtype)?, parse_op(op)?);
        let comm = self.get()?;
        self.tensors.fetch_add(1, Ordering::Relaxed);
        tensor::allreduce(py, &comm, buffer, dtype, op)
    }

    /// Start an all-reduce of a buffer; return a `Handle` whose `wait()` writes the result
    /// back (the data is copied in now and out at `wait()`). Arguments as
    /// `allreduce_buffer`. Every rank must start the same tensors in the same order.
    #[pyo3(signature = (buffer, dtype, op="sum"))]
    fn allreduce_buffer_async(
        &self,
        buffer: &Bound<'_, PyAny>,
        dtype: &str,
        op: &str,
    ) -> PyResult<Handle> {
        let (dtype, op) = (Dtype::parse(dtype)?, parse_op(op)?);
        let comm = self.get()?;
        self.tensors.fetch_add(1, Ordering::Relaxed);
        tensor::allreduce_async(&comm, buffer, dtype, op)
    }

    /// Return every rank's bytes, in rank order (a list of `bytes`), exactly: moved
    /// through the switch as int32 sums with one non-zero term each. `data` is any
    /// C-contiguous buffer (`bytes`, a uint8 array); ranks may bring different lengths.
    /// Blocking, the GIL released; every rank must call it in the same order as its other
    /// collectives.
    fn allgather_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let mine = PyBuffer::<u8>::get(data)?.to_vec(py)?;
        let comm = self.get()?;
        self.byte_collectives.fetch_add(1, Ordering::Relaxed);
        let all = py
            .allow_threads(|| collectives::allgather(&comm, &mine))
            .map_err(to_py)?;
        Ok(all.iter().map(|b| PyBytes::new(py, b)).collect())
    }

    /// Return rank `root`'s bytes on every rank, exactly (as `allgather_bytes`); `data`
    /// is read on the root only (others may pass `b""`).
    fn broadcast_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        root: u16,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mine = PyBuffer::<u8>::get(data)?.to_vec(py)?;
        let comm = self.get()?;
        self.byte_collectives.fetch_add(1, Ordering::Relaxed);
        let got = py
            .allow_threads(|| collectives::broadcast(&comm, root, &mine))
            .map_err(to_py)?;
        Ok(PyBytes::new(py, &got))
    }

    /// Return the worker's counters: tensors (all-reduces started through this object,
    /// one per tensor) and byte_collectives (`broadcast_bytes` and `allgather_bytes`
    /// calls); added over its lanes: sent (contributions, resends included),
    /// retransmissions, probes (asked before resending, protocol.md §6.1), probe_waits (of
    /// those, answered "held": resends saved), fetches (lost Results fetched with a Probe
    /// instead of a resend), suspected, results, stale_results, ignored; and the
    /// fallback's: fallbacks (switch-to-ring transitions), fallback_tensors and
    /// fallback_bytes (all-reduced over the host ring), fallback_adopted.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let comm = self.get()?;
        let (s, f) = (comm.stats(), comm.fallback_stats());
        let d = PyDict::new(py);
        d.set_item("fallbacks", f.fallbacks)?;
        d.set_item("fallback_tensors", f.tensors)?;
        d.set_item("fallback_bytes", f.bytes)?;
        d.set_item("fallback_adopted", f.adopted)?;
        d.set_item("sent", s.sent)?;
        d.set_item("retransmissions", s.retransmissions)?;
        d.set_item("probes", s.probes)?;
        d.set_item("probe_waits", s.probe_waits)?;
        d.set_item("fetches", s.fetches)?;
        d.set_item("suspected", s.suspected)?;
        d.set_item("results", s.results)?;
        d.set_item("stale_results", s.stale_results)?;
        d.set_item("ignored", s.ignored)?;
        d.set_item("tensors", self.tensors.load(Ordering::Relaxed))?;
        d.set_item(
            "byte_collectives",
            self.byte_collectives.load(Ordering::Relaxed),
        )?;
        Ok(d)
    }

    /// Return each lane's smoothed round trip and current retransmission timeout, in
    /// seconds (srtt is None until a round trip was measured).
    fn timing<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.get()?
            .timing()
            .into_iter()
            .map(|t| {
                let d = PyDict::new(py);
                d.set_item("srtt", t.srtt.map(|s| s.as_secs_f64()))?;
                d.set_item("rto", t.rto.as_secs_f64())?;
                Ok(d)
            })
            .collect()
    }

    /// Return the settings in force, every one of `switchml.SETTINGS` but the key (the
    /// count as chosen from the path, a fallback_addr only if the fallback is on).
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let comm = self.get()?;
        let d = PyDict::new(py);
        // Every setting, from the one list (`switchml.SETTINGS`), but the key: a secret.
        for (name, value) in Settings::of(comm.config()).values() {
            match value {
                _ if name == "key" => {}
                SettingValue::Number(n) => d.set_item(name, n)?,
                SettingValue::Text(t) => d.set_item(name, t)?,
            }
        }
        Ok(d)
    }

    /// This worker's rank.
    #[getter]
    fn rank(&self) -> PyResult<u16> {
        Ok(self.get()?.rank())
    }

    /// The number of ranks.
    #[getter]
    fn world_size(&self) -> PyResult<u16> {
        Ok(self.get()?.world_size())
    }

    /// Why this communicator falls back to the host ring (the switch path's error), or None.
    #[getter]
    fn fallback_reason(&self) -> PyResult<Option<String>> {
        Ok(self.get()?.fallback_stats().reason)
    }

    /// The switch's epoch when this worker joined (a restarted switch has a new one).
    #[getter]
    fn epoch(&self) -> PyResult<u32> {
        Ok(self.get()?.epoch())
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// Leave the job and stop the lanes (the GIL released); later calls raise. A handle
    /// still in flight finishes or fails on its own.
    fn close(&self, py: Python<'_>) {
        let comm = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        py.allow_threads(move || drop(comm));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        match self.get() {
            Ok(c) => {
                let c = c.config();
                format!(
                    "Communicator(rank={}, world_size={}, switch='{}', job={})",
                    c.rank, c.world, c.switch, c.job
                )
            }
            Err(_) => "Communicator(closed)".into(),
        }
    }
}
