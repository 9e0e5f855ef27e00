//! The README's commands work as written: every `sh` block, in order, in a
//! fresh temporary directory, as a new user would type them after cloning.
//!
//! `./x` there is a link to the repository's `x`, run with `WBSIM_BIN` set
//! to the binary under test (so it does not build another), `HOME` is the
//! temporary directory (so `./x install` links into it), and `examples/`
//! is the repository's. Skipped: lines that say they need root (live
//! mode), and `./x test` and `./x lint` (the test suite itself, which CI
//! runs anyway).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shell lines of a Markdown text's ```sh blocks, with their line
/// numbers, comments kept.
fn sh_lines(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut inside = false;
    for (i, l) in md.lines().enumerate() {
        let t = l.trim();
        if t.starts_with("```") {
            inside = !inside && t == "```sh";
            continue;
        }
        if inside && !t.is_empty() && !t.starts_with('#') {
            out.push((i + 1, t.to_string()));
        }
    }
    out
}

/// Why a README line is not run here, or None to run it.
fn skip_reason(line: &str) -> Option<&'static str> {
    let comment = line.split_once(" #").map(|c| c.1).unwrap_or("");
    if comment.contains("needs root") || line.starts_with("sudo ") {
        return Some("needs root");
    }
    if line.starts_with("./x test") || line.starts_with("./x lint") {
        return Some("the test suite itself");
    }
    if line.starts_with("jq ") && !have("jq") {
        return Some("jq is not installed");
    }
    None
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wbsim-readme-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A directory with `./x` (the repository's), the repository's examples
/// and kept kernel runs, and `bin/wbsim` (what `./x install` links) for the docs'
/// `wbsim ...` lines.
fn user_dir(tag: &str) -> PathBuf {
    let d = tempdir(tag);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::os::unix::fs::symlink(repo.join("x"), d.join("x")).unwrap();
    std::os::unix::fs::symlink(repo.join("examples"), d.join("examples")).unwrap();
    // the kept kernel runs the fidelity lines score against
    std::fs::create_dir_all(d.join("tests/data")).unwrap();
    std::os::unix::fs::symlink(
        repo.join("tests/data/kernel-runs"),
        d.join("tests/data/kernel-runs"),
    )
    .unwrap();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_wbsim"), d.join("bin/wbsim")).unwrap();
    d
}

/// `bash -c line` in `dir` as a user there would run it.
pub fn user_shell(dir: &Path, line: &str) -> std::process::Output {
    Command::new("bash")
        .args(["-euo", "pipefail", "-c", line])
        .current_dir(dir)
        .env("WBSIM_BIN", env!("CARGO_BIN_EXE_wbsim"))
        .env("HOME", dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                dir.join("bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .unwrap()
}

fn run_blocks(doc: &str, tag: &str) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    let md = std::fs::read_to_string(&path).unwrap();
    let dir = user_dir(tag);
    let mut ran = 0;
    for (n, line) in sh_lines(&md) {
        if skip_reason(&line).is_some() {
            continue;
        }
        let out = user_shell(&dir, &line);
        assert!(
            out.status.success(),
            "{doc}:{n}: `{line}` failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    ran
}

#[test]
fn every_readme_command_works_as_written() {
    let ran = run_blocks("README.md", "readme");
    // the quick start, the own-scenario block and the fidelity line's
    // neighbours: if the README loses its commands, so does this test
    assert!(ran >= 10, "only {ran} README commands ran");
}

#[test]
fn the_docs_quick_examples_work_as_written() {
    // the docs write `wbsim` for what `./x install` put on the PATH
    assert!(run_blocks("docs/fio.md", "fio") >= 6);
    assert!(run_blocks("docs/outputs.md", "outputs") >= 3);
}

#[test]
fn x_reads_and_writes_paths_where_its_caller_is() {
    // from another directory, by a path to x: ./mine.toml and ./o are the
    // caller's, not the repository's
    let dir = tempdir("xpaths");
    let x = Path::new(env!("CARGO_MANIFEST_DIR")).join("x");
    let x = x.display();
    let out = user_shell(
        &dir,
        &format!(
            "'{x}' default-scenario > mine.toml && \
             '{x}' run ./mine.toml --set run.duration=3s --out ./o//"
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("o/summary.json").is_file());
    // the path is printed as the user would write it
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("output in o/ (trace.txt, summary.json"),
        "{text}"
    );
    // a command x does not know is refused with its usage
    let bad = user_shell(&dir, &format!("'{x}' frobnicate"));
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("usage: ./x run|test"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_readme_blocks_are_read_as_a_user_reads_them() {
    let md = "text\n```sh\n./x run   # go\n\n# a comment line\nsudo wbsim live a.toml\n```\n\
              ```\nnot shell\n```\n```sh\n./x test\n./x live b.toml --out l/   # needs root\n```\n";
    let lines = sh_lines(md);
    let texts: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        texts,
        [
            "./x run   # go",
            "sudo wbsim live a.toml",
            "./x test",
            "./x live b.toml --out l/   # needs root"
        ]
    );
    assert_eq!(lines[0].0, 3);
    let skips: Vec<Option<&str>> = texts.iter().map(|l| skip_reason(l)).collect();
    assert_eq!(
        skips,
        [
            None,
            Some("needs root"),
            Some("the test suite itself"),
            Some("needs root")
        ]
    );
}
