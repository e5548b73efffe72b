//! The Python interpreters a sweep races `scripts/pyhash.py` under, and what the results
//! record about each: version, implementation, and whether the GIL is on.
//!
//! The point of racing several is the ranking flip: with pure-Python work
//! (`--work pysum`) an interpreter with a GIL runs one thread at a time, so threads lose
//! to processes; a free-threaded build (CPython 3.13t / 3.14t) runs them in parallel.
//! So the harness looks for a free-threaded interpreter on PATH by itself, and when it
//! finds none it says so in the results ([`FREE_THREADED_ABSENT`]) rather than leaving
//! the rows out silently.
//!
//! An interpreter is asked about itself by running it ([`probe`]); one named with
//! `--python` that cannot answer stops the plan with one line naming it, before anything
//! is generated or timed.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hash_core::Strategy;
use serde::{Deserialize, Serialize};

/// `scripts/pyhash.py`'s strategies, as its command line names them.
pub const PYHASH_STRATEGIES: [&str; 4] = ["serial", "threads", "procs", "asyncio"];

/// pyhash's counterpart of a hashrace strategy, if it has one: the same name,
/// but `asyncio` for `async`.
pub fn counterpart(s: Strategy) -> Option<&'static str> {
    let name = if s.name() == "async" {
        "asyncio"
    } else {
        s.name()
    };
    PYHASH_STRATEGIES.into_iter().find(|p| *p == name)
}

use crate::util::which_in;

/// Free-threaded interpreters looked for on PATH, newest first.
pub const FREE_THREADED_NAMES: [&str; 2] = ["python3.14t", "python3.13t"];

/// What the results say in place of the free-threaded rows when none was found.
pub const FREE_THREADED_ABSENT: &str = "absent: no free-threaded interpreter found \
     (python3.14t, python3.13t on PATH, or --python). To install one on a machine with \
     internet: `uv python install 3.14t`, then put its python3.14t on PATH";

/// The oldest Python `pyhash.py` runs on (`asyncio.to_thread`).
const MIN_VERSION: (u32, u32) = (3, 9);

/// How long an interpreter may take to describe itself.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// What it prints: one JSON object (standard library only, Python 3.0 syntax, so an old
/// interpreter still answers and is refused for its version, not for a syntax error).
const PROBE: &str = "import json, platform, sys, sysconfig\n\
    g = getattr(sys, '_is_gil_enabled', None)\n\
    print(json.dumps({'executable': sys.executable, 'version': platform.python_version(), \
    'major': sys.version_info[0], 'minor': sys.version_info[1], \
    'implementation': getattr(getattr(sys, 'implementation', None), 'name', 'unknown'), \
    'gil_enabled': g() if g else None, \
    'free_threaded_build': bool(sysconfig.get_config_var('Py_GIL_DISABLED'))}))";

/// One interpreter, as raced and recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interpreter {
    /// Prefix of its rows' names: `python` for the default `python3`, else the file name
    /// it was found or given as (`python3.14t`, `pypy3`).
    pub label: String,
    /// The executable that runs (`sys.executable`, so a version manager's shim is not
    /// timed too).
    pub executable: String,
    /// `platform.python_version()`.
    pub version: String,
    /// `sys.implementation.name`: `cpython`, `pypy`, ...
    pub implementation: String,
    /// `sys._is_gil_enabled()`, where the interpreter has it (3.13 and later); `None`
    /// before, where the GIL is always on.
    pub gil_enabled: Option<bool>,
    /// Built free-threaded (the `Py_GIL_DISABLED` sysconfig variable).
    pub free_threaded_build: bool,
}

impl Interpreter {
    /// Whether threads run Python code in parallel in this interpreter.
    pub fn gil_off(&self) -> bool {
        self.gil_enabled == Some(false)
    }

    /// How it is named in tables: `CPython 3.11.7, GIL on`.
    pub fn describe(&self) -> String {
        let implementation = match self.implementation.as_str() {
            "cpython" => "CPython",
            "pypy" => "PyPy",
            other => other,
        };
        let gil = match (self.gil_enabled, self.free_threaded_build) {
            (Some(false), _) => "GIL off",
            (_, true) => "free-threaded build, GIL on",
            _ => "GIL on",
        };
        format!("{implementation} {}, {gil}", self.version)
    }
}

/// The interpreter's answer to [`PROBE`].
#[derive(Deserialize)]
struct Answer {
    executable: String,
    version: String,
    major: u32,
    minor: u32,
    implementation: String,
    gil_enabled: Option<bool>,
    free_threaded_build: bool,
}

/// Ask `program` about itself; an error says why it is not a Python `pyhash.py` can run
/// on (not found, fails, says something else, too old, hangs).
pub fn probe(program: &str, label: &str) -> Result<Interpreter> {
    let mut child = Command::new(program)
        .args(["-c", PROBE])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {program}"))?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() > PROBE_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "{program} did not answer within {} s",
                PROBE_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    if !status.success() {
        let why = err.lines().last().unwrap_or("").trim().to_string();
        bail!(
            "{program} -c failed ({status}){}",
            if why.is_empty() {
                String::new()
            } else {
                format!(": {why}")
            }
        );
    }
    let a: Answer = serde_json::from_str(out.trim())
        .with_context(|| format!("{program} does not answer like a Python interpreter"))?;
    if (a.major, a.minor) < MIN_VERSION {
        bail!(
            "{program} is Python {}; scripts/pyhash.py needs {}.{} or later",
            a.version,
            MIN_VERSION.0,
            MIN_VERSION.1
        );
    }
    let executable = if Path::new(&a.executable).is_file() {
        a.executable
    } else {
        program.to_string()
    };
    Ok(Interpreter {
        label: label.to_string(),
        executable,
        version: a.version,
        implementation: a.implementation,
        gil_enabled: a.gil_enabled,
        free_threaded_build: a.free_threaded_build,
    })
}

/// The label of an interpreter named `program`: its file name, except that `python3`
/// keeps the rows' historic names (`python-threads`).
fn label_of(program: &str) -> String {
    if program == "python3" {
        return "python".into();
    }
    Path::new(program)
        .file_name()
        .map_or_else(|| program.to_string(), |n| n.to_string_lossy().into_owned())
}

/// The interpreters of a sweep and, when none of them runs with the GIL off, the note
/// that stands in for the free-threaded rows.
///
/// `asked` empty: `python3` if it works (labelled `python`; a sweep without Python is
/// still a sweep). Otherwise exactly those, each of which must work. Either way, any
/// free-threaded interpreter on PATH ([`FREE_THREADED_NAMES`]) not already among them.
/// Names are looked up in `search` (PATH-style) when it is given, else on PATH.
pub fn interpreters(
    asked: &[String],
    search: Option<&OsStr>,
) -> Result<(Vec<Interpreter>, Option<String>)> {
    let mut found: Vec<Interpreter> = Vec::new();
    if asked.is_empty() {
        if let Some(python3) = which_in("python3", search) {
            match probe(&python3.to_string_lossy(), &label_of("python3")) {
                Ok(i) => found.push(i),
                Err(e) => eprintln!("hash-bench: python3: {e:#}; the Python rows are left out"),
            }
        }
    } else {
        for program in asked {
            if program.is_empty() {
                bail!("--python needs a path or a command name, not an empty string");
            }
            let i = probe(program, &label_of(program))
                .with_context(|| format!("--python {program}: not a working Python"))?;
            // The same interpreter named twice (python3 and its real path) is raced once.
            if !found.iter().any(|f| f.executable == i.executable) {
                found.push(i);
            }
        }
    }
    for name in FREE_THREADED_NAMES {
        let Some(path) = which_in(name, search) else {
            continue;
        };
        match probe(&path.to_string_lossy(), name) {
            Ok(i) if found.iter().any(|f| f.executable == i.executable) => {}
            Ok(i) => found.push(i),
            Err(e) => eprintln!("hash-bench: {name}: {e:#}; not raced"),
        }
    }
    unique_labels(&mut found);
    // A free-threaded build run with its GIL turned back on (PYTHON_GIL=1) is raced and
    // described as such; the note is for the case where there is none at all.
    let absent = (!found.is_empty() && !found.iter().any(|i| i.gil_off() || i.free_threaded_build))
        .then(|| FREE_THREADED_ABSENT.to_string());
    Ok((found, absent))
}

/// Make labels unique (`python3`, `python3-2`): they name rows.
fn unique_labels(found: &mut [Interpreter]) {
    for i in 1..found.len() {
        let base = found[i].label.clone();
        let mut n = 2;
        while found[..i].iter().any(|f| f.label == found[i].label) {
            found[i].label = format!("{base}-{n}");
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interp(label: &str, gil: Option<bool>, ft: bool) -> Interpreter {
        Interpreter {
            label: label.into(),
            executable: format!("/usr/bin/{label}"),
            version: "3.14.0".into(),
            implementation: "cpython".into(),
            gil_enabled: gil,
            free_threaded_build: ft,
        }
    }

    #[test]
    fn descriptions_say_whether_the_gil_is_on() {
        assert_eq!(
            interp("p", None, false).describe(),
            "CPython 3.14.0, GIL on"
        );
        assert_eq!(
            interp("p", Some(false), true).describe(),
            "CPython 3.14.0, GIL off"
        );
        // PYTHON_GIL=1 on a free-threaded build turns it back on.
        assert_eq!(
            interp("p", Some(true), true).describe(),
            "CPython 3.14.0, free-threaded build, GIL on"
        );
        assert!(interp("p", Some(false), true).gil_off());
        assert!(!interp("p", None, false).gil_off());
    }

    #[test]
    fn labels_are_made_unique() {
        let mut v = vec![
            interp("python3", None, false),
            interp("python3", None, false),
            interp("python3", None, false),
        ];
        unique_labels(&mut v);
        let labels: Vec<&str> = v.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["python3", "python3-2", "python3-3"]);
        assert_eq!(label_of("/opt/py/bin/python3.14t"), "python3.14t");
        assert_eq!(label_of("python3"), "python");
        assert_eq!(label_of("/usr/bin/python3"), "python3");
    }

    #[test]
    fn what_is_not_a_python_is_refused_with_its_name() {
        // `true` succeeds but says nothing; `false` fails; the third does not exist.
        for program in ["true", "false", "/nonexistent/python9"] {
            let e = format!("{:#}", probe(program, "x").unwrap_err());
            assert!(e.contains(program), "{e}");
        }
        let e = format!("{:#}", interpreters(&["false".into()], None).unwrap_err());
        assert!(e.starts_with("--python false: not a working Python"), "{e}");
    }

    #[test]
    fn the_machine_python_describes_itself() {
        if crate::util::which("python3").is_none() {
            eprintln!("skipped: python3 is not installed");
            return;
        }
        let i = probe("python3", "python").unwrap();
        assert!(Path::new(&i.executable).is_file());
        assert!(i.version.starts_with('3'), "{}", i.version);
        // What the interpreter says, asked another way.
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.implementation.name)"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            i.implementation
        );
    }
}
