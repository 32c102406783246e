//! `hrr-synth`: regenerate the committed example archives, or write a large
//! realistic archive for benchmarks.
//!
//! ```text
//! cargo run -p hrr-testkit --bin hrr-synth -- examples <dir>
//! cargo run -p hrr-testkit --bin hrr-synth -- big <dir> [--gib N]
//! cargo run -p hrr-testkit --bin hrr-synth -- fleet <dir> [--count N]
//! cargo run -p hrr-testkit --bin hrr-synth -- live <dir> <ranges>
//! ```
//!
//! `fleet` writes N (default 12) capture roots of mixed shapes and prints
//! their paths, one a line: the list a fleet triage reads with `--from`.

use std::path::PathBuf;
use std::process::ExitCode;

use hrr_testkit::fleet::write_fleet;
use hrr_testkit::synth::{write_big, write_examples, write_live};

fn usage() -> ExitCode {
    eprintln!(
        "usage: hrr-synth examples <dir> | hrr-synth big <dir> [--gib N] | hrr-synth fleet <dir> [--count N] | hrr-synth live <dir> <ranges>"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("examples") if args.len() == 2 => match write_examples(&PathBuf::from(&args[1])) {
            Ok(root) => {
                println!("wrote {}", root.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: cannot write examples: {e}");
                ExitCode::FAILURE
            }
        },
        Some("big") if args.len() == 2 || args.len() == 4 => {
            let gib: f64 = match args.get(2).map(String::as_str) {
                None => 1.0,
                Some("--gib") => match args[3].parse() {
                    Ok(g) => g,
                    Err(_) => return usage(),
                },
                Some(_) => return usage(),
            };
            let dir = PathBuf::from(&args[1]);
            let target = (gib * (1u64 << 30) as f64) as u64;
            match write_big(&dir, 1, target) {
                Ok(s) => {
                    println!(
                        "wrote {}/pid-1/events.bin: {} bytes, {} events, {} launches, {} D2H checks",
                        dir.display(),
                        s.bytes,
                        s.events,
                        s.launches,
                        s.d2h_checks
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: cannot write {}: {e}", dir.display());
                    ExitCode::FAILURE
                }
            }
        }
        Some("fleet") if args.len() == 2 || args.len() == 4 => {
            let count: usize = match args.get(2).map(String::as_str) {
                None => 12,
                Some("--count") => match args[3].parse() {
                    Ok(n) if n > 0 => n,
                    _ => return usage(),
                },
                Some(_) => return usage(),
            };
            let dir = PathBuf::from(&args[1]);
            match write_fleet(&dir, count) {
                Ok(roots) => {
                    for root in roots {
                        println!("{}", root.display());
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: cannot write the fleet under {}: {e}", dir.display());
                    ExitCode::FAILURE
                }
            }
        }
        Some("live") if args.len() == 3 => {
            let Ok(ranges) = args[2].parse() else {
                return usage();
            };
            match write_live(&PathBuf::from(&args[1]), 1, ranges) {
                Ok(dir) => {
                    println!(
                        "wrote {}: {ranges} allocations live at the end",
                        dir.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: cannot write {}: {e}", args[1]);
                    ExitCode::FAILURE
                }
            }
        }
        _ => usage(),
    }
}
