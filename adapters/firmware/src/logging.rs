//! Records through `defmt` or `log`, whichever feature is on; nothing when neither is.
//! Arguments must implement both `Display` and `defmt::Format`, with plain `{}`.

/// Emit a warning.
macro_rules! warning {
    ($($arg:tt)*) => {{
        #[cfg(feature = "log")]
        log::warn!($($arg)*);
        #[cfg(feature = "defmt")]
        defmt::warn!($($arg)*);
    }};
}

/// Emit a debug record.
macro_rules! debug {
    ($($arg:tt)*) => {{
        #[cfg(feature = "log")]
        log::debug!($($arg)*);
        #[cfg(feature = "defmt")]
        defmt::debug!($($arg)*);
    }};
}

pub(crate) use {debug, warning};
