//! The `switchml` program's logger: lines on stderr, filtered by `RUST_LOG`.
//!
//! `RUST_LOG` takes comma-separated directives as `env_logger` does: a level
//! (`error`, `warn`, `info`, `debug`, `trace`, `off`) sets the default; `target=level` sets
//! it for a module path and everything under it (`switchml_switchd::daemon=debug`); a bare
//! target turns everything on for it. The most specific target wins. Unset or empty, only
//! warnings and errors print: the program stays quiet unless something is wrong.

use std::io::Write;

use log::{LevelFilter, Log, Metadata, Record};

/// The level when `RUST_LOG` does not say.
const DEFAULT: LevelFilter = LevelFilter::Warn;

/// Which levels print, by target.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Filter {
    default: LevelFilter,
    /// `(target, level)`, longest target first.
    targets: Vec<(String, LevelFilter)>,
}

impl Filter {
    /// Parse `RUST_LOG`; return the filter and the directives it could not read.
    fn parse(spec: &str) -> (Filter, Vec<String>) {
        let mut filter = Filter {
            default: DEFAULT,
            targets: Vec::new(),
        };
        let mut bad = Vec::new();
        for directive in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            match directive.split_once('=') {
                Some((target, level)) => match level.trim().parse() {
                    Ok(level) if !target.trim().is_empty() => {
                        filter.targets.push((target.trim().to_string(), level));
                    }
                    _ => bad.push(directive.to_string()),
                },
                None => match directive.parse() {
                    Ok(level) => filter.default = level,
                    Err(_) => filter
                        .targets
                        .push((directive.to_string(), LevelFilter::Trace)),
                },
            }
        }
        filter
            .targets
            .sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        (filter, bad)
    }

    /// Return the most verbose level printed for `target`.
    fn level(&self, target: &str) -> LevelFilter {
        self.targets
            .iter()
            .find(|(t, _)| {
                target
                    .strip_prefix(t.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
            })
            .map_or(self.default, |(_, level)| *level)
    }

    /// Return the most verbose level printed for any target.
    fn max(&self) -> LevelFilter {
        self.targets
            .iter()
            .map(|(_, l)| *l)
            .fold(self.default, Ord::max)
    }
}

/// Writes each record as one line on stderr.
struct StderrLogger {
    filter: Filter,
}

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= self.filter.level(metadata.target())
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            let _ = writeln!(
                std::io::stderr().lock(),
                "[{} {}] {}",
                record.level(),
                record.target(),
                record.args()
            );
        }
    }

    fn flush(&self) {}
}

/// Install the logger, filtered by `RUST_LOG`. Call once, first thing.
pub fn init() {
    let spec = std::env::var("RUST_LOG").unwrap_or_default();
    let (filter, bad) = Filter::parse(&spec);
    for directive in bad {
        eprintln!("switchml: RUST_LOG: ignoring {directive:?} (expected LEVEL or TARGET=LEVEL)");
    }
    let max = filter.max();
    // The logger lives as long as the program: leaking the one box is what a static is.
    if log::set_logger(Box::leak(Box::new(StderrLogger { filter }))).is_ok() {
        log::set_max_level(max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(spec: &str) -> Filter {
        let (filter, bad) = Filter::parse(spec);
        assert!(bad.is_empty(), "{spec:?}: {bad:?}");
        filter
    }

    #[test]
    fn quiet_by_default() {
        let f = parse("");
        assert_eq!(f.level("switchml_switchd::daemon"), LevelFilter::Warn);
        assert_eq!(f.max(), LevelFilter::Warn);
    }

    #[test]
    fn a_level_sets_the_default_and_targets_refine_it() {
        let f = parse("info, switchml_switchd=debug,switchml_switchd::daemon_log=off");
        assert_eq!(f.level("switchml"), LevelFilter::Info);
        assert_eq!(f.level("switchml_switchd"), LevelFilter::Debug);
        assert_eq!(f.level("switchml_switchd::batch"), LevelFilter::Debug);
        assert_eq!(f.level("switchml_switchd::daemon_log"), LevelFilter::Off);
        // A prefix of a name is not a parent module.
        assert_eq!(f.level("switchml_switchdx"), LevelFilter::Info);
        assert_eq!(f.max(), LevelFilter::Debug);
    }

    #[test]
    fn a_bare_target_turns_everything_on_for_it() {
        let f = parse("switchml_switchd");
        assert_eq!(f.level("switchml_switchd::daemon"), LevelFilter::Trace);
        assert_eq!(f.level("clap"), LevelFilter::Warn);
    }

    #[test]
    fn unreadable_directives_are_reported_and_skipped() {
        let (f, bad) = Filter::parse("debug,switchml_switchd=loud,=info");
        assert_eq!(bad, ["switchml_switchd=loud", "=info"]);
        assert_eq!(f.level("switchml_switchd"), LevelFilter::Debug);
    }
}
