//! What a lane does with a float tensor that holds a NaN or ±∞: a setting of [`Config`]
//! that the tensor queue (`tensors.rs`) and the slot loop (`slots.rs`) both read, kept in
//! its own module so that neither has to reach back into the lane's for it.
//!
//! [`Config`]: super::Config

/// What the worker does with a float tensor that holds a NaN or ±∞ (protocol.md §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NonFinitePolicy {
    /// Send it: each such value as 0 in a chunk flagged with the kinds it held, so that
    /// every rank gets the non-finite value IEEE addition gives over that chunk (what
    /// `torch.cuda.amp.GradScaler` relies on to skip a step on every rank). A float sum
    /// of finite values beyond the type's range is ±∞ there, as IEEE addition gives it.
    #[default]
    Propagate,
    /// Refuse it at submission with [`SubmitErrorKind::NonFinite`]; nothing is sent. A
    /// float sum beyond the type's range is reported as [`TensorError::Overflow`].
    ///
    /// [`SubmitErrorKind::NonFinite`]: super::SubmitErrorKind::NonFinite
    /// [`TensorError::Overflow`]: super::TensorError::Overflow
    Refuse,
}

/// The text form the settings use (`SWITCHML_NON_FINITE`): `propagate` or `error`.
impl NonFinitePolicy {
    /// Return the policy's name, as [`str::parse`] reads it: `propagate` or `error`.
    pub const fn name(self) -> &'static str {
        match self {
            NonFinitePolicy::Propagate => "propagate",
            NonFinitePolicy::Refuse => "error",
        }
    }
}

impl core::str::FromStr for NonFinitePolicy {
    type Err = &'static str;

    fn from_str(s: &str) -> Result<NonFinitePolicy, &'static str> {
        match s.trim() {
            "propagate" => Ok(NonFinitePolicy::Propagate),
            "error" => Ok(NonFinitePolicy::Refuse),
            _ => Err("a non-finite policy is \"propagate\" or \"error\""),
        }
    }
}
