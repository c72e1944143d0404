//! Protocol traces through `log` (host) or `defmt` (firmware), whichever feature is on;
//! nothing at all when neither is. Format arguments must implement both `Display` and
//! `defmt::Format` and use plain `{}` placeholders.

/// Emit a warning: something failed or is about to.
macro_rules! warning {
    ($($arg:tt)*) => {{
        #[cfg(feature = "log")]
        log::warn!($($arg)*);
        #[cfg(feature = "defmt")]
        defmt::warn!($($arg)*);
    }};
}

/// Emit an informational record: a state change worth knowing about.
macro_rules! info {
    ($($arg:tt)*) => {{
        #[cfg(feature = "log")]
        log::info!($($arg)*);
        #[cfg(feature = "defmt")]
        defmt::info!($($arg)*);
    }};
}

pub(crate) use {info, warning};
