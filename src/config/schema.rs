//! Every configuration key `hrr` reads: its type and its legacy environment
//! names (DESIGN §4). `config/default.toml` documents the same keys and holds
//! their defaults; a test keeps the two in step.

use std::time::Duration;

use anyhow::{bail, Context as _};

/// The type of a configuration value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A string (paths, image names).
    Str,
    /// `true` / `false`.
    Bool,
    /// A non-negative integer.
    Int,
    /// Seconds as an integer, or a string such as `"90"`, `"90s"`, `"30m"`, `"1h"`.
    Duration,
    /// Bytes as an integer, or a string such as `"512MiB"`.
    Size,
    /// `"auto"` or a GPU ordinal.
    Gpu,
    /// An array of strings.
    StrList,
    /// GPU indices: `"0,1,2,3"`, an array of integers, or one integer;
    /// kept as the comma-separated string.
    GpuList,
    /// One of a fixed set of strings.
    Choice(&'static [&'static str]),
    /// `"auto"`, `true` or `false`.
    AutoBool,
}

/// One configuration key.
#[derive(Debug)]
pub struct KeySpec {
    /// Dotted name, e.g. `replay.timeout`.
    pub key: &'static str,
    /// What values it takes.
    pub kind: Kind,
    /// Upstream environment names that set it, first match wins.
    pub legacy_env: &'static [&'static str],
}

const fn key(key: &'static str, kind: Kind, legacy_env: &'static [&'static str]) -> KeySpec {
    KeySpec {
        key,
        kind,
        legacy_env,
    }
}

/// All keys, in the order `config show` prints them.
pub const KEYS: &[KeySpec] = &[
    key("rocm.path", Kind::Str, &["ROCM_PATH", "HIP_PATH"]),
    key("playback.path", Kind::Str, &["HRR_PLAYBACK"]),
    key("playback.source", Kind::Str, &[]),
    key("playback.build_dir", Kind::Str, &["HRR_BUILD"]),
    key("playback.rocr_lib", Kind::Str, &["ROCR_LIB"]),
    key(
        "replay.mode",
        Kind::Choice(&["auto", "native", "docker"]),
        &[],
    ),
    key("replay.gpu", Kind::Gpu, &["GPU"]),
    key("replay.timeout", Kind::Duration, &["HRR_REPLAY_TIMEOUT"]),
    key(
        "replay.sync",
        Kind::Choice(&["launch", "event", "none"]),
        &[],
    ),
    key("replay.trace_kernels", Kind::Bool, &[]),
    key(
        "replay.progress_seconds",
        Kind::Int,
        &["HIP_HRR_REPLAY_PROGRESS_SECONDS"],
    ),
    key("replay.extra_args", Kind::StrList, &[]),
    key("replay.kfd", Kind::Str, &[]),
    key("replay.gpus", Kind::GpuList, &[]),
    key("docker.image", Kind::Str, &["HRR_DOCKER_IMAGE"]),
    key("docker.mount_clr", Kind::Bool, &["HRR_DOCKER_MOUNT_CLR"]),
    key("docker.clr_build", Kind::Str, &["CLR_BUILD"]),
    key("docker.extra_ld", Kind::Str, &["HRR_DOCKER_EXTRA_LD"]),
    key("docker.sudo", Kind::AutoBool, &[]),
    key("docker.env", Kind::StrList, &[]),
    key("preflight.skip", Kind::Bool, &["HRR_SKIP_COMPAT"]),
    key("preflight.continue", Kind::Bool, &["HRR_CONTINUE"]),
    key(
        "preflight.strict_version",
        Kind::Bool,
        &["HRR_STRICT_VERSION"],
    ),
    key("preflight.strict_arch", Kind::Bool, &["HRR_STRICT_ARCH"]),
    key("output.workdir", Kind::Str, &["HRR_TRIAGE_WORKDIR"]),
    key(
        "output.format",
        Kind::Choice(&["markdown", "json", "jsonl"]),
        &[],
    ),
    key("scripts.path", Kind::StrList, &[]),
    key("lua.max_instructions", Kind::Int, &[]),
    key("lua.max_memory", Kind::Size, &[]),
];

/// The top-level key that selects a profile.
pub const PROFILE_KEY: &str = "profile";

/// The prefix of user alias keys (`alias.<name>`).
pub const ALIAS_PREFIX: &str = "alias.";

/// The spec of `key`, if `hrr` knows it.
pub fn spec(key: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.key == key)
}

/// Checks `value` against `kind` and returns it normalised (legacy
/// environment strings become booleans and integers). The error says what
/// was expected.
pub fn check(kind: Kind, value: toml::Value) -> anyhow::Result<toml::Value> {
    use toml::Value as V;
    Ok(match (kind, value) {
        (Kind::Str, V::String(s)) => V::String(s),
        (Kind::Bool, V::Boolean(b)) => V::Boolean(b),
        (Kind::Bool, V::String(s)) => V::Boolean(parse_bool(&s)?),
        (Kind::AutoBool, V::Boolean(b)) => V::Boolean(b),
        (Kind::AutoBool, V::String(s)) if s == "auto" => V::String(s),
        (Kind::AutoBool, V::String(s)) => V::Boolean(parse_bool(&s)?),
        (Kind::Int, V::Integer(i)) if i >= 0 => V::Integer(i),
        (Kind::Int, V::String(s)) => V::Integer(
            s.trim()
                .parse::<u32>()
                .map(i64::from)
                .with_context(|| format!("expected a whole number, found \"{s}\""))?,
        ),
        (Kind::Duration, V::Integer(i)) if i >= 0 => {
            within_max_duration(Duration::from_secs(i.unsigned_abs()), &i.to_string())?;
            V::Integer(i)
        }
        (Kind::Duration, V::String(s)) => {
            parse_duration(&s)?;
            V::String(s)
        }
        (Kind::Size, V::Integer(i)) if i > 0 => V::Integer(i),
        (Kind::Size, V::String(s)) => {
            parse_size(&s)?;
            V::String(s)
        }
        (Kind::Gpu, V::Integer(i)) if i >= 0 => V::Integer(i),
        (Kind::Gpu, V::String(s)) if s == "auto" => V::String(s),
        (Kind::Gpu, V::String(s)) => V::Integer(
            s.trim()
                .parse::<u32>()
                .map(i64::from)
                .with_context(|| format!("expected \"auto\" or a GPU ordinal, found \"{s}\""))?,
        ),
        (Kind::GpuList, V::Integer(i)) if i >= 0 => V::String(i.to_string()),
        (Kind::GpuList, V::String(s)) => V::String(join_gpus(&parse_gpu_list(&s)?)),
        (Kind::GpuList, V::Array(items)) => {
            let gpus = items
                .iter()
                .map(|v| match v {
                    V::Integer(i) => u32::try_from(*i).ok(),
                    _ => None,
                })
                .collect::<Option<Vec<u32>>>()
                .with_context(|| {
                    format!(
                        "expected GPU indices, found {}",
                        show(&V::Array(items.clone()))
                    )
                })?;
            V::String(join_gpus(&parse_gpu_list(&join_gpus(&gpus))?))
        }
        (Kind::StrList, V::Array(items)) if items.iter().all(toml::Value::is_str) => {
            V::Array(items)
        }
        (Kind::Choice(set), V::String(s)) if set.contains(&s.as_str()) => V::String(s),
        (kind, other) => bail!("expected {}, found {}", describe(kind), show(&other)),
    })
}

fn show(value: &toml::Value) -> String {
    let text = value.to_string();
    if text.len() > 60 {
        format!("{}…", &text[..text.floor_char_boundary(60)])
    } else {
        text
    }
}

/// What a value of `kind` looks like, for error messages.
pub fn describe(kind: Kind) -> String {
    match kind {
        Kind::Str => "a string".into(),
        Kind::Bool => "true or false".into(),
        Kind::Int => "a whole number".into(),
        Kind::Duration => "a duration such as 90, \"90s\", \"30m\", \"1h\" (0 = none)".into(),
        Kind::Size => "a size such as 536870912 or \"512MiB\"".into(),
        Kind::Gpu => "\"auto\" or a GPU ordinal".into(),
        Kind::StrList => "an array of strings".into(),
        Kind::GpuList => "GPU indices such as \"0,1,2,3\" or [0, 1, 2, 3]".into(),
        Kind::Choice(set) => format!("one of {}", set.join(", ")),
        Kind::AutoBool => "\"auto\", true or false".into(),
    }
}

/// Parses GPU indices separated by commas (`"0,1,2,3"`; `replay.gpus`,
/// `--gpus`), each given once.
pub fn parse_gpu_list(s: &str) -> anyhow::Result<Vec<u32>> {
    let mut list = Vec::new();
    for entry in s.split(',').map(str::trim) {
        let gpu: u32 = entry.parse().map_err(|_| {
            anyhow::anyhow!(
                "expected GPU indices separated by commas (e.g. 0,1,2,3), found \"{s}\""
            )
        })?;
        if list.contains(&gpu) {
            bail!("GPU {gpu} is named twice in \"{s}\"; give each GPU once");
        }
        list.push(gpu);
    }
    Ok(list)
}

fn join_gpus(gpus: &[u32]) -> String {
    gpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_bool(s: &str) -> anyhow::Result<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => bail!("expected true or false (or 1/0), found \"{s}\""),
    }
}

/// Parses a duration: plain seconds (`"90"`), or a number with a unit
/// (`"90s"`, `"30m"`, `"1h"`, `"1h 30m"`). `"0"` means no limit.
pub fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    let s = s.trim();
    let d = match s.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => humantime::parse_duration(s).map_err(|e| {
            anyhow::anyhow!(
                "expected a duration such as 90, \"90s\", \"30m\", \"1h\", found \"{s}\" ({e})"
            )
        })?,
    };
    within_max_duration(d, s)
}

/// The longest time limit `hrr` accepts. A deadline is "now + limit", and
/// far beyond this the clock cannot represent it.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// `d` when it is at most [`MAX_DURATION`]; otherwise an error quoting
/// `given` and saying that 0 means no limit.
pub fn within_max_duration(d: Duration, given: &str) -> anyhow::Result<Duration> {
    if d > MAX_DURATION {
        bail!("the duration \"{given}\" is longer than the longest hrr accepts (366 days); use 0 for no limit");
    }
    Ok(d)
}

/// Parses a size in bytes: `"536870912"`, `"512MiB"`, `"1GiB"`, `"64KiB"`,
/// `"512MB"`.
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .with_context(|| format!("expected a size such as \"512MiB\", found \"{s}\""))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        other => bail!("unknown size unit \"{other}\" in \"{s}\" (use B, KiB, MiB or GiB)"),
    };
    n.checked_mul(mult)
        .filter(|&b| b > 0)
        .with_context(|| format!("size \"{s}\" is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_accept_the_documented_spellings() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn durations_past_the_clock_are_refused_not_wrapped() {
        assert_eq!(parse_duration("366d").unwrap(), MAX_DURATION);
        for huge in ["9223372036854775807", "584542046090y", "367d"] {
            let err = parse_duration(huge).unwrap_err().to_string();
            assert!(err.contains("longer than the longest hrr accepts"), "{err}");
        }
        let err = check(Kind::Duration, toml::Value::Integer(i64::MAX)).unwrap_err();
        assert!(err.to_string().contains("use 0 for no limit"), "{err}");
    }

    #[test]
    fn sizes_accept_binary_units() {
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("12 parsecs").is_err());
    }

    #[test]
    fn legacy_strings_are_normalised() {
        let b = check(Kind::Bool, toml::Value::String("1".into())).unwrap();
        assert_eq!(b, toml::Value::Boolean(true));
        let g = check(Kind::Gpu, toml::Value::String("3".into())).unwrap();
        assert_eq!(g, toml::Value::Integer(3));
        assert!(check(Kind::Gpu, toml::Value::String("first".into())).is_err());
        assert!(check(Kind::Choice(&["a"]), toml::Value::String("b".into())).is_err());
    }

    #[test]
    fn gpu_lists_take_a_string_an_array_or_one_index() {
        let gpus = |v: toml::Value| check(Kind::GpuList, v).map(|v| v.to_string());
        assert_eq!(
            gpus(toml::Value::String(" 0, 2,3".into())).unwrap(),
            "\"0,2,3\""
        );
        assert_eq!(gpus(toml::Value::Integer(1)).unwrap(), "\"1\"");
        let array = toml::Value::Array(vec![toml::Value::Integer(3), toml::Value::Integer(1)]);
        assert_eq!(gpus(array).unwrap(), "\"3,1\"");
        for bad in ["0,x", "1,1", ""] {
            assert!(gpus(toml::Value::String(bad.into())).is_err(), "{bad}");
        }
        let negative = toml::Value::Array(vec![toml::Value::Integer(-1)]);
        assert!(gpus(negative).is_err());
    }

    #[test]
    fn default_toml_documents_every_key() {
        let text = include_str!("../../config/default.toml");
        for spec in KEYS {
            let (section, name) = spec.key.split_once('.').unwrap();
            let header = format!("[{section}]");
            let body = text
                .split(&header)
                .nth(1)
                .unwrap_or_else(|| panic!("default.toml lacks {header}"));
            let body = body.split("\n[").next().unwrap();
            let set = format!("\n{name} = ");
            let unset = format!("\n# {name} = ");
            assert!(
                body.contains(&set) || body.contains(&unset),
                "default.toml does not document {}",
                spec.key
            );
        }
    }
}
