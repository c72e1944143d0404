//! The p4app dialect's path of the [`Communicator`](crate::Communicator)
//! (`SWITCHML_DIALECT=p4app`): the original controller's gRPC calls in its client's order,
//! then the dialect's frames over one kernel UDP socket, through
//! `switchml_p4app_switch::UdpDialectWorker` (which drives the core's `P4appWorker`).
//! One tensor at a time, on the caller's thread; f16 and bf16 go through f32.

use std::sync::Mutex;

use half::{bf16, f16};
use switchml_core::p4app::{P4appSize, P4appTensor};
use switchml_core::quant::{Elements, Op};
use switchml_p4app_switch::{DialectError, DialectSetup, UdpDialectWorker};

use crate::config::CommConfig;
use crate::error::Error;
use crate::part::Element;

/// The dialect's link of one communicator.
pub(crate) struct DialectLink {
    worker: Mutex<UdpDialectWorker>,
    world: u16,
    limit: std::time::Duration,
}

fn error(e: DialectError, limit: std::time::Duration) -> Error {
    match e {
        DialectError::Io(e) => Error::Io {
            what: "the p4app dialect's socket".into(),
            source: e.into(),
        },
        DialectError::Stalled => Error::Timeout {
            what: "a p4app all-reduce".into(),
            after: limit,
        },
        e => Error::Config(format!("p4app dialect: {e}")),
    }
}

impl DialectLink {
    /// Join the session: `config.switch` is the controller.
    pub(crate) fn join(config: &CommConfig) -> Result<DialectLink, Error> {
        let mut setup = DialectSetup::new(config.switch, config.rank, config.world);
        // `validate` admits only the counts the dialect has a size for.
        setup.size =
            P4appSize::of_elements(usize::from(config.count)).unwrap_or(P4appSize::Elements64);
        setup.job_limit = config.join_timeout.max(config.max_rto * 100);
        let limit = setup.job_limit;
        let worker = UdpDialectWorker::join(&setup).map_err(|e| error(e, limit))?;
        Ok(DialectLink {
            worker: Mutex::new(worker),
            world: config.world,
            limit,
        })
    }

    /// Reduce `data` in place.
    pub(crate) fn allreduce<T: Element>(&self, data: &mut [T], op: Op) -> Result<(), Error> {
        let mut w = self.worker.lock().unwrap_or_else(|p| p.into_inner());
        let mut run = |t: P4appTensor<'_>| w.allreduce(t).map_err(|e| error(e, self.limit));
        let world = f32::from(self.world);
        let scale = |x: f32| if op == Op::Average { x / world } else { x };
        match T::elements(data) {
            Elements::I32(d) => {
                if op == Op::Average {
                    return Err(Error::Config("an int32 tensor cannot be averaged".into()));
                }
                run(P4appTensor::I32(d))
            }
            Elements::F32(d) => {
                run(P4appTensor::F32(&mut *d))?;
                d.iter_mut().for_each(|x| *x = scale(*x));
                Ok(())
            }
            Elements::F16(d) => {
                let mut f: Vec<f32> = d.iter().map(|x| x.to_f32()).collect();
                run(P4appTensor::F32(&mut f))?;
                for (o, x) in d.iter_mut().zip(f) {
                    *o = f16::from_f32(scale(x));
                }
                Ok(())
            }
            Elements::Bf16(d) => {
                let mut f: Vec<f32> = d.iter().map(|x| x.to_f32()).collect();
                run(P4appTensor::F32(&mut f))?;
                for (o, x) in d.iter_mut().zip(f) {
                    *o = bf16::from_f32(scale(x));
                }
                Ok(())
            }
        }
    }
}
