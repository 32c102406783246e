//! `hrr-test-tool`: stands in for the programs hrr runs beside the player
//! in its Windows tests, where a shell script cannot: a test copies it as
//! `cmake.exe`, `amd-smi.exe`, `rocm-smi.exe` or `wsl.exe`, and it acts as
//! the program its file is named after. Test-only; never installed.
//!
//! Every run appends its arguments, joined by spaces, as one line to the
//! file `HRR_TEST_TOOL_ARGV` names, and writes its process id to the file
//! `HRR_TEST_TOOL_PID_FILE` names; with `HRR_TEST_TOOL_HANG` set it then
//! sleeps for two minutes, a build or a WSL run that does not end. Then:
//! * as `cmake`, `--build <dir> …` writes `<dir>\playback\Release\hrr-playback.exe`
//!   (a copy of the file `HRR_TEST_TOOL_PLAYER` names), where cmake's
//!   default Windows generator (Visual Studio, multi-config) puts the
//!   Release build, and prints `built`; with `HRR_TEST_TOOL_FAIL` set it
//!   prints `compile line 1` to `compile line 30` and exits 2 instead. Any
//!   other call is the configure step and prints `configured`.
//! * as anything else, it answers from the JSON file `HRR_TEST_TOOL_REPLIES`
//!   names, an array of `{"args": [...], "stdout": "...", "stderr": "...",
//!   "exit": N}`: the first entry whose `args` begin the arguments prints
//!   its `stdout` and `stderr` and exits with its `exit` (0 when absent);
//!   with none, it says so on stderr and exits 1, as a program given
//!   arguments it does not take.

use std::io::Write;
use std::path::{Path, PathBuf};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(file) = std::env::var_os("HRR_TEST_TOOL_ARGV") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .expect("the argv file");
        writeln!(f, "{}", args.join(" ")).expect("the argv file");
    }
    if let Some(file) = std::env::var_os("HRR_TEST_TOOL_PID_FILE") {
        std::fs::write(file, std::process::id().to_string()).expect("the pid file");
    }
    if std::env::var_os("HRR_TEST_TOOL_HANG").is_some() {
        std::thread::sleep(std::time::Duration::from_secs(120));
    }
    let me = std::env::current_exe().expect("own path");
    let name = me
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let code = if name == "cmake" {
        cmake(&args)
    } else {
        reply(&args)
    };
    std::process::exit(code);
}

/// The cmake stand-in; returns the exit code.
fn cmake(args: &[String]) -> i32 {
    let [first, dir, ..] = args else {
        println!("configured");
        return 0;
    };
    if first != "--build" {
        println!("configured");
        return 0;
    }
    if std::env::var_os("HRR_TEST_TOOL_FAIL").is_some() {
        for i in 1..=30 {
            println!("compile line {i}");
        }
        return 2;
    }
    let player =
        PathBuf::from(std::env::var_os("HRR_TEST_TOOL_PLAYER").expect("HRR_TEST_TOOL_PLAYER"));
    let out = Path::new(dir).join("playback").join("Release");
    std::fs::create_dir_all(&out).expect("the build's output dir");
    std::fs::copy(player, out.join("hrr-playback.exe")).expect("the built player");
    println!("built");
    0
}

/// The answer of the first reply whose `args` begin `args`; returns the
/// exit code.
fn reply(args: &[String]) -> i32 {
    let replies: serde_json::Value = std::env::var_os("HRR_TEST_TOOL_REPLIES")
        .and_then(|f| std::fs::read(f).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let found = replies.as_array().into_iter().flatten().find(|r| {
        let want: Vec<&str> = r["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str())
            .collect();
        want.len() <= args.len() && want.iter().zip(args).all(|(w, a)| w == a)
    });
    let Some(found) = found else {
        eprintln!("unknown arguments: {}", args.join(" "));
        return 1;
    };
    print!("{}", found["stdout"].as_str().unwrap_or(""));
    eprint!("{}", found["stderr"].as_str().unwrap_or(""));
    let _ = std::io::stdout().flush();
    found["exit"].as_i64().map_or(0, |c| c as i32)
}
