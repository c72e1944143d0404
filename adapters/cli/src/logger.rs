//! The `switchml` program's logger: `env_logger`, one line per record on stderr, filtered
//! by `RUST_LOG` (`info`, `switchml_switchd=debug`, `switchml::packet=trace` for a packet
//! trace, ...). Unset or empty, only warnings and errors print: the program stays quiet
//! unless something is wrong.

use std::io::Write;

/// Install the logger, filtered by `RUST_LOG`. Call once, first thing.
pub fn init() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format(|out, record| {
            writeln!(
                out,
                "[{} {}] {}",
                record.level(),
                record.target(),
                record.args()
            )
        })
        .init();
}
