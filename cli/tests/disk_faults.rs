//! Disk faults, kept as tests: what the embedded store (`workers.sqlite3`) and its memory
//! (`stores/*.state`) do when the disk under them fills, turns read-only, damages a file,
//! loses power mid-write (SIGKILL), or is wiped. For each: the run fails loudly, naming the
//! file and what to do (never a panic, never a bare driver code), or goes on; and no run
//! afterwards hands out an ID handed out before.
//!
//! The full and read-only disks are a 1 MiB tmpfs of the test's own, so they need root
//! and a kernel that lets this process mount one; elsewhere those tests say why on stderr
//! and pass without running. The wipe, the damaged files and SIGKILL without a filling
//! disk need no mount and always run.

mod common;

use common::machine::Machine;
use common::serve::{ids_of, Serve};
use common::stderr_of;

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use uidgen::BitsAllocator;

/// 64 IDs a millisecond: 100,000 IDs fill about 1.6 s of ticks, which the cached
/// generator borrows from the future in a fraction of that.
const SLOW_LAYOUT: [&str; 4] = ["--layout", "47/10/6", "--unit", "ms"];

fn slow_bits() -> BitsAllocator {
    // A TIME/WORKER/SEQ layout takes the default preset's epoch (cli/src/args.rs).
    BitsAllocator::builder()
        .bits(47, 10, 6)
        .unit(uidgen::TimeUnit::Milliseconds)
        .epoch("2026-01-01")
        .build()
        .unwrap()
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `prefix` followed by `rest`, as owned arguments.
fn args<'a>(prefix: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    prefix.iter().chain(rest).copied().collect()
}

/// The IDs of a run's stdout, one a line; a last line without its newline (cut short by
/// a kill) is not an ID and is dropped.
fn whole_lines(stdout: &[u8], what: &str) -> Vec<u64> {
    let text = String::from_utf8_lossy(stdout);
    let whole = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    whole
        .lines()
        .map(|line| {
            line.parse()
                .unwrap_or_else(|_| panic!("{what}: {line:?} is not an ID"))
        })
        .collect()
}

/// The IDs of a run that must have succeeded.
fn ok_ids(out: &Output, what: &str) -> Vec<u64> {
    common::success_stdout(out);
    whole_lines(&out.stdout, what)
}

/// Asserts that `ids` rise strictly.
fn assert_increasing(ids: &[u64], what: &str) {
    if let Some(i) = ids.windows(2).position(|w| w[1] <= w[0]) {
        panic!("{what}: ID {} after {}", ids[i + 1], ids[i]);
    }
}

/// All IDs handed out so far: a new batch must repeat none of them.
#[derive(Default)]
struct Seen(HashSet<u64>);

/// Adds a run's IDs to what was handed out of its kind: segments (`segment next`) apart
/// from snowflake IDs, which may share numbers with them.
fn note(run: &[&str], ids: &[u64], what: &str, seen: &mut Seen, segments: &mut Seen) {
    if run[0] == "segment" {
        segments.add(ids, what);
    } else {
        seen.add(ids, what);
    }
}

impl Seen {
    fn add(&mut self, ids: &[u64], what: &str) {
        let repeated: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|id| self.0.contains(id))
            .collect();
        assert!(
            repeated.is_empty(),
            "{what}: {} of {} IDs were handed out before (first {:?})",
            repeated.len(),
            ids.len(),
            &repeated[..repeated.len().min(5)]
        );
        let before = self.0.len();
        self.0.extend(ids);
        assert_eq!(
            self.0.len(),
            before + ids.len(),
            "{what}: the batch repeats its own IDs"
        );
    }
}

/// Asserts a run failed loudly: exit status 1, no ID on stdout, no panic, and every one
/// of `expected` in stderr.
fn assert_failed_with(out: &Output, expected: &[&str], what: &str) {
    let err = stderr_of(out);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert!(
        out.stdout.is_empty(),
        "{what}: printed {:?} on a failure",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
    for want in expected {
        assert!(err.contains(want), "{what}: {want:?} not in: {err}");
    }
}

/// Empties the embedded store's file and removes every file of its memory, leaving the
/// folder (`: > workers.sqlite3; rm stores/*`).
fn wipe(store: &Path, memory: &Path) {
    File::create(store).expect("truncate the store");
    for entry in std::fs::read_dir(memory).expect("the memory folder") {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::remove_file(&path).unwrap();
        }
    }
}

fn machine_store(machine: &Machine) -> PathBuf {
    machine.home.path().join("data/uidgen/workers.sqlite3")
}

fn machine_memory(machine: &Machine) -> PathBuf {
    machine.home.path().join("stores")
}

/// The store's state file in `memory` (there is one store).
fn state_file(memory: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(memory)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "state"))
        .collect();
    assert_eq!(
        files.len(),
        1,
        "one state file in {}: {files:?}",
        memory.display()
    );
    files.into_iter().next().unwrap()
}

// ---------------------------------------------------------------------------------------
// A small tmpfs of the test's own.

/// A 1 MiB tmpfs holding the embedded store and its memory, unmounted on drop (lazily if
/// something still holds it).
struct Tmpfs {
    mount: tempfile::TempDir,
    home: tempfile::TempDir,
    fillers: std::cell::Cell<u32>,
}

impl Tmpfs {
    /// The mount, or `None` after saying on stderr why `test` does not run here.
    fn mount(test: &str) -> Option<Self> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("{test}: skipped: mounting a tmpfs needs root");
            return None;
        }
        let mount = tempfile::tempdir().expect("a mount point");
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                "size=1m,mode=0700",
                "uidgen-disk-faults",
            ])
            .arg(mount.path())
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Self {
                mount,
                home: tempfile::tempdir().unwrap(),
                fillers: std::cell::Cell::new(0),
            }),
            Ok(out) => {
                eprintln!(
                    "{test}: skipped: `mount -t tmpfs` failed here: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("{test}: skipped: cannot run mount: {e}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.mount.path()
    }

    fn store(&self) -> PathBuf {
        self.path().join("workers.sqlite3")
    }

    fn memory(&self) -> PathBuf {
        self.path().join("stores")
    }

    fn envs(&self) -> Vec<(String, String)> {
        let home = self.home.path();
        vec![
            ("HOME".into(), home.display().to_string()),
            (
                "XDG_DATA_HOME".into(),
                home.join("data").display().to_string(),
            ),
            (
                "UIDGEN_WORKER_DB".into(),
                self.store().display().to_string(),
            ),
            (
                "UIDGEN_STATE_DIR".into(),
                self.memory().display().to_string(),
            ),
        ]
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_uidgen"));
        common::clean(&mut cmd).args(args).envs(self.envs());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Writes a filler file until the file system says it is full (ENOSPC).
    fn fill(&self) {
        fill(self.path(), self.fillers.get());
        self.fillers.set(self.fillers.get() + 1);
        assert_eq!(free_bytes(self.path()), 0, "the tmpfs is not full");
    }

    /// Removes every filler file.
    fn free(&self) {
        free(self.path());
    }

    /// `mount -o remount,MODE`.
    fn remount(&self, mode: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "remount {mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let path = self.mount.path();
        let done = Command::new("umount")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        if !done {
            let _ = Command::new("umount").arg("-l").arg(path).status();
        }
    }
}

/// Writes `dir/filler-N` until ENOSPC (a bounded number of 64 KiB writes).
fn fill(dir: &Path, n: u32) {
    let path = dir.join(format!("filler-{n}"));
    let mut file = match File::create(&path) {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return,
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let chunk = vec![0xA5u8; 64 * 1024];
    for _ in 0..1024 {
        match file.write_all(&chunk) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return,
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    panic!("{} never filled up", dir.display());
}

fn free(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("filler-"))
        {
            std::fs::remove_file(&path).unwrap();
        }
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: statvfs writes into the struct we pass; the path is a valid C string.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut stat) }, 0);
    stat.f_bavail as u64 * stat.f_frsize as u64
}

/// Says the disk is full, in uidgen's words or the OS's.
fn says_full(err: &str) -> bool {
    err.contains("the disk is full") || err.contains("No space left on device")
}

// ---------------------------------------------------------------------------------------
// A run read while it goes.

/// A spawned `uidgen`, its stdout and stderr read to the end on threads of their own.
struct Running {
    child: Child,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
    /// A message once the first bytes reach stdout.
    started: mpsc::Receiver<()>,
}

impl Running {
    fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("uidgen starts");
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let (tx, started) = mpsc::channel();
        let stdout = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match out.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if all.is_empty() {
                            let _ = tx.send(());
                        }
                        all.extend_from_slice(&buf[..n]);
                    }
                }
            }
            all
        });
        let stderr = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = err.read_to_end(&mut all);
            all
        });
        Self {
            child,
            stdout,
            stderr,
            started,
        }
    }

    /// Waits for the end (at most `within`), then returns its status, stdout and stderr.
    fn finish(mut self, within: Duration) -> (ExitStatus, Vec<u8>, String) {
        let deadline = Instant::now() + within;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("uidgen did not end within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let stdout = self.stdout.join().unwrap();
        let stderr = String::from_utf8_lossy(&self.stderr.join().unwrap()).into_owned();
        (status, stdout, stderr)
    }

    /// SIGKILL (a run that already ended is left as it is), then what it left.
    fn kill(mut self) -> (ExitStatus, Vec<u8>, String) {
        let _ = self.child.kill();
        self.finish(Duration::from_secs(10))
    }
}

// ---------------------------------------------------------------------------------------
// The wipe.

/// The reproduction of the wipe, twenty times over: a run that borrowed ahead of
/// the clock, then rounds of {empty `workers.sqlite3` and remove every file of its memory,
/// the same run again}. Each run after a wipe starts its leases 5 s ahead of the clock
/// (past anything an earlier run may have borrowed) and says so: every run's IDs rise,
/// and every ID is above every ID of every run before it. (Before the fix, the run right
/// after a wipe started at the clock and repeated the IDs the one before had borrowed.)
#[test]
fn the_wipe_on_the_command_line_never_repeats_an_id() {
    let machine = Machine::new();
    let (store, memory) = (machine_store(&machine), machine_memory(&machine));
    let run = args(&["next", "-n", "100000"], &SLOW_LAYOUT);
    let first = machine.ids(&run);
    let ended = now_millis();
    assert_eq!(first.len(), 100_000);
    assert_increasing(&first, "the first run");
    // Without IDs ahead of the clock a wipe could not make a repeat: nothing proven.
    let last = slow_bits().parse(*first.last().unwrap()).unwrap();
    let lead = last.timestamp_millis as i64 - ended as i64;
    assert!(
        lead > 300,
        "the first run's last ID is only {lead} ms ahead of the clock at its end"
    );
    let mut highest = *first.last().unwrap();
    let mut seen = Seen::default();
    seen.add(&first, "the first run");
    for round in 1..=20 {
        wipe(&store, &memory);
        let out = machine.run(&run);
        let what = format!("run {round} after a wipe");
        let ids = ok_ids(&out, &what);
        assert_eq!(ids.len(), 100_000, "{what}");
        seen.add(&ids, &what);
        assert_increasing(&ids, &what);
        assert!(
            ids[0] > highest,
            "{what}: its first ID {} is not above {highest}, the highest before \
             ({} ms back); stderr: {}",
            ids[0],
            slow_bits().parse(highest).unwrap().timestamp_millis as i64
                - slow_bits().parse(ids[0]).unwrap().timestamp_millis as i64,
            stderr_of(&out)
        );
        highest = *ids.last().unwrap();
        let err = stderr_of(&out);
        assert!(
            err.contains("it was wiped") && err.contains("5 s ahead of the clock"),
            "{what}: no warning that the store was wiped: {err}"
        );
    }
}

/// The wipe under `uidgen serve`: twenty rounds of {serve on the machine's embedded store,
/// 50,000 IDs fetched flat out in ten batches, SIGTERM, wipe}. The js-safe layout makes 64
/// IDs a millisecond, so each round borrows several hundred milliseconds ahead of the
/// clock; every round's IDs are above every earlier round's and none repeats.
#[test]
fn the_wipe_under_serve_never_repeats_an_id() {
    let machine = Machine::new();
    let (store, memory) = (machine_store(&machine), machine_memory(&machine));
    let envs = machine.envs();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let bits = uidgen::Preset::JsSafe.builder().build().unwrap();
    let mut seen = Seen::default();
    let mut highest = 0;
    let mut leads = Vec::new();
    for round in 0..20 {
        let what = format!("serve round {round}");
        let serve = Serve::start(&["--layout", "js-safe"], &envs);
        let answers = fetch(&serve, "/v1/snowflake?count=5000", 10);
        let fetched = now_millis();
        let mut ids = Vec::new();
        for (status, body) in &answers {
            assert_eq!(*status, 200, "{what}: {body}");
            ids.extend(ids_of(body));
        }
        assert_eq!(ids.len(), 50_000, "{what}");
        seen.add(&ids, &what);
        assert_increasing(&ids, &what);
        assert!(ids[0] > highest, "{what}: {} not above {highest}", ids[0]);
        highest = *ids.last().unwrap();
        leads.push(bits.parse(highest).unwrap().timestamp_millis as i64 - fetched as i64);
        let (status, stderr) = serve.terminate();
        assert!(status.success(), "{what}: {status:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        if round > 0 {
            assert!(
                stderr.contains("it was wiped"),
                "{what}: no warning that the store was wiped: {stderr}"
            );
        }
        wipe(&store, &memory);
    }
    // Without IDs ahead of the clock a wipe could not make a repeat: nothing proven.
    assert!(
        leads.iter().filter(|&&lead| lead > 100).count() >= 10,
        "the rounds did not borrow ahead of the clock: {leads:?} ms"
    );
}

/// `count` GETs of `path` on one curl connection, as fast as it goes: (status, body) each.
fn fetch(serve: &Serve, path: &str, count: usize) -> Vec<(u16, String)> {
    const MARK: &str = "\n@@status ";
    let url = serve.url(path);
    let out = Command::new("curl")
        .args([
            "-s",
            "-S",
            "--max-time",
            "30",
            "-w",
            "\n@@status %{http_code}\n",
        ])
        .args(std::iter::repeat_n(&url, count))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut answers = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(MARK) {
        let body = rest[..at].to_owned();
        let after = &rest[at + MARK.len()..];
        let (code, tail) = after.split_once('\n').unwrap_or((after, ""));
        answers.push((code.trim().parse().unwrap_or(0), body));
        rest = tail;
    }
    assert_eq!(
        answers.len(),
        count,
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    answers
}

/// What the wipe cannot see, as the README says: when the memory folder goes with the
/// store (`rm -rf` of the whole data folder, a new container without its volume), the next
/// run has no sign that anything ran before, starts at the clock, and does not warn. (It
/// may then repeat IDs an earlier run borrowed ahead; how many is printed, not asserted.)
#[test]
fn a_wipe_that_takes_the_memory_folder_too_starts_at_the_clock() {
    let machine = Machine::new();
    let (store, memory) = (machine_store(&machine), machine_memory(&machine));
    let run = args(&["next", "-n", "100000"], &SLOW_LAYOUT);
    let first = machine.ids(&run);
    std::fs::remove_file(&store).unwrap();
    std::fs::remove_dir_all(&memory).unwrap();
    let started = now_millis();
    let out = machine.ok(&run);
    let ids = whole_lines(&out.stdout, "after the folder went");
    let first_at = slow_bits().parse(ids[0]).unwrap().timestamp_millis;
    assert!(
        first_at < started + 1_000,
        "started {} ms ahead of the clock: the run saw the wipe after all",
        first_at as i64 - started as i64
    );
    assert!(!stderr_of(&out).contains("wiped"), "{}", stderr_of(&out));
    let before: HashSet<u64> = first.into_iter().collect();
    let repeated = ids.iter().filter(|id| before.contains(id)).count();
    eprintln!("a wipe with its memory folder: {repeated} of 100000 IDs repeated");
}

/// Not a wipe: a new store file on a machine that keeps memory of another store (a second
/// `UIDGEN_WORKER_DB`, or a state folder a deployment made) starts at the clock, without
/// the warning, so the default generator's first run needs no wait.
#[test]
fn a_new_store_beside_the_memory_of_another_is_not_taken_for_a_wiped_one() {
    let machine = Machine::new();
    machine.ok(&["next", "-n", "5"]);
    assert!(
        machine_memory(&machine).is_dir(),
        "the first run kept memory"
    );
    let other = machine.home.path().join("data/uidgen/other.sqlite3");
    let out = machine
        .command(&["next", "-n", "5", "--generator", "default"])
        .env("UIDGEN_WORKER_DB", &other)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!stderr_of(&out).contains("wiped"), "{}", stderr_of(&out));
    let first = whole_lines(&out.stdout, "a new store")[0];
    let first_at = BitsAllocator::default()
        .parse(first)
        .unwrap()
        .timestamp_millis;
    assert!(
        first_at < now_millis() + 1_000,
        "a new store started {} ms ahead of the clock",
        first_at as i64 - now_millis() as i64
    );
}

/// A wipe where the state file is emptied rather than removed (`: > stores/*.state`):
/// the store is taken as wiped all the same (no identity remembered), and nothing repeats.
#[test]
fn a_wipe_that_empties_the_state_file_never_repeats_an_id() {
    let machine = Machine::new();
    let (store, memory) = (machine_store(&machine), machine_memory(&machine));
    let run = args(&["next", "-n", "200000"], &SLOW_LAYOUT);
    let mut seen = Seen::default();
    seen.add(&machine.ids(&run), "the first run");
    File::create(&store).unwrap();
    File::create(state_file(&memory)).unwrap();
    seen.add(&machine.ids(&run), "the run after the wipe");
}

// ---------------------------------------------------------------------------------------
// A full disk.

/// A full disk before a run: on a store never used, and on one used before, `next` (both
/// generators) and `segment next` exit 1 with no ID, naming the file and saying the disk
/// is full. Once the space is freed, each succeeds and repeats nothing.
#[test]
fn a_full_disk_before_a_run_is_an_error_naming_the_file() {
    let Some(disk) = Tmpfs::mount("a_full_disk_before_a_run_is_an_error_naming_the_file") else {
        return;
    };
    let store = disk.store().display().to_string();
    disk.fill();
    let out = disk.run(&["next", "-n", "5"]);
    assert_failed_with(&out, &[&store], "a new store on a full disk");
    assert!(says_full(&stderr_of(&out)), "{}", stderr_of(&out));
    disk.free();

    let mut seen = Seen::default();
    let mut segments = Seen::default();
    let ok = |args: &[&str], what: &str| {
        let out = disk.run(args);
        ok_ids(&out, what)
    };
    seen.add(
        &ok(&["next", "-n", "1000"], "the first run"),
        "the first run",
    );
    let created = disk.run(&["segment", "create", "--tag", "t", "--step", "100"]);
    common::success_stdout(&created);
    segments.add(
        &ok(&["segment", "next", "--tag", "t", "-n", "500"], "segment"),
        "segment",
    );

    let runs: [&[&str]; 3] = [
        &["next", "-n", "5"],
        &["next", "-n", "5", "--generator", "default"],
        &["segment", "next", "--tag", "t", "-n", "5"],
    ];
    disk.fill();
    for run in runs {
        let out = disk.run(run);
        let what = format!("{run:?} on a full disk");
        assert_failed_with(&out, &[&store], &what);
        assert!(says_full(&stderr_of(&out)), "{what}: {}", stderr_of(&out));
    }
    disk.free();
    for run in runs {
        let what = format!("{run:?} after freeing the disk");
        let ids = ok(run, &what);
        assert_eq!(ids.len(), 5, "{what}");
        note(run, &ids, &what, &mut seen, &mut segments);
    }
}

/// A disk that fills while a run hands out IDs: `next` on the 64-IDs-a-millisecond layout
/// for a few seconds (with the default lease and with a 1 s lease, which must record its
/// mark several times a second), and `segment next`. The filler starts once the run has
/// printed its first ID. Each run either finishes, or exits 1 naming a file of the store
/// (no panic); what it printed rises, and no run after the space is freed repeats any of
/// it.
#[test]
fn a_disk_that_fills_during_a_run_ends_it_loudly_or_not_at_all() {
    let Some(disk) = Tmpfs::mount("a_disk_that_fills_during_a_run_ends_it_loudly_or_not_at_all")
    else {
        return;
    };
    let path = disk.path().display().to_string();
    let mut seen = Seen::default();
    let mut segments = Seen::default();
    common::success_stdout(&disk.run(&["segment", "create", "--tag", "t", "--step", "1000"]));
    let long_next = args(&["next", "-n", "400000"], &SLOW_LAYOUT);
    let long_next_short_lease = args(&long_next, &["--lease-ttl", "1"]);
    let runs: [(&[&str], u64); 3] = [
        (&long_next, 400_000),
        (&long_next_short_lease, 400_000),
        (
            &["segment", "next", "--tag", "t", "-n", "2000000"],
            2_000_000,
        ),
    ];
    for (run, count) in runs {
        let what = format!("{run:?} while the disk fills");
        let running = Running::spawn(disk.command(run));
        running
            .started
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{what}: printed nothing within 30 s"));
        disk.fill();
        let (status, stdout, stderr) = running.finish(Duration::from_secs(60));
        let ids = whole_lines(&stdout, &what);
        assert_increasing(&ids, &what);
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        if status.success() {
            assert_eq!(ids.len() as u64, count, "{what}: succeeded short: {stderr}");
        } else {
            assert_eq!(status.code(), Some(1), "{what}: {stderr}");
            let error = stderr
                .lines()
                .rfind(|line| line.starts_with("uidgen: "))
                .unwrap_or_else(|| panic!("{what}: no error line: {stderr}"));
            assert!(
                error.contains(&format!("{path}/")),
                "{what}: the error names no file of the store: {stderr}"
            );
            assert!((ids.len() as u64) < count, "{what}: failed after every ID");
            assert!(
                says_full(&stderr) || stderr.contains("(full, read-only or failing)"),
                "{what}: the error does not say the disk is full: {stderr}"
            );
        }
        eprintln!(
            "{what}: {} after {} IDs",
            if status.success() {
                "finished"
            } else {
                "failed"
            },
            ids.len()
        );
        disk.free();
        let segment = run[0] == "segment";
        if segment {
            segments.add(&ids, &what);
        } else {
            seen.add(&ids, &what);
        }
        // Afterwards, with room again.
        let after: &[&str] = if segment {
            &["segment", "next", "--tag", "t", "-n", "1000"]
        } else {
            &["next", "-n", "100000"]
        };
        let what = format!("{after:?} after {what}");
        let ids = ok_ids(&disk.run(after), &what);
        if segment {
            segments.add(&ids, &what);
        } else {
            seen.add(&ids, &what);
        }
    }
}

/// `uidgen serve` on a disk that fills: a 1 s lease (its mark recorded three times a
/// second) on the js-safe layout. While the disk is full each request answers IDs or an
/// error status (503 with the reason), never a repeat and never a crash; once it must
/// record a mark it cannot, it answers 503. After the space is freed it serves again by
/// itself, and after a restart nothing repeats.
#[test]
fn serve_on_a_full_disk_answers_ids_or_errors() {
    let Some(disk) = Tmpfs::mount("serve_on_a_full_disk_answers_ids_or_errors") else {
        return;
    };
    let config = disk.home.path().join("serve.toml");
    std::fs::write(&config, "lease_ttl_ms = 1000\n").unwrap();
    let config = config.display().to_string();
    let envs = disk.envs();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let flags = ["--config", config.as_str(), "--layout", "js-safe"];
    let route = "/v1/snowflake?count=5000";
    let mut seen = Seen::default();
    let mut take = |answers: Vec<(u16, String)>, what: &str| -> (usize, usize) {
        let (mut good, mut refused) = (0, 0);
        for (status, body) in answers {
            if status == 200 {
                let ids = ids_of(&body);
                assert_increasing(&ids, what);
                seen.add(&ids, what);
                good += 1;
            } else {
                assert_eq!(status, 503, "{what}: {body}");
                assert!(body.contains("\"error\""), "{what}: {body}");
                refused += 1;
            }
        }
        (good, refused)
    };

    let mut serve = Serve::start(&flags, &envs);
    let (good, _) = take(fetch(&serve, route, 4), "before the disk fills");
    assert_eq!(good, 4);
    disk.fill();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut refused = 0;
    while refused == 0 {
        assert!(
            Instant::now() < deadline,
            "serve answered IDs for 15 s on a full disk with a 1 s lease"
        );
        refused += take(fetch(&serve, route, 2), "on a full disk").1;
        assert!(
            serve.child.try_wait().unwrap().is_none(),
            "serve exited on a full disk"
        );
    }
    // Still refusing, and still there, a moment later.
    take(fetch(&serve, route, 5), "on a full disk");
    assert!(serve.child.try_wait().unwrap().is_none(), "serve exited");
    disk.free();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if take(fetch(&serve, route, 1), "after freeing the disk").0 == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "serve did not serve again within 15 s of the disk being freed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, stderr) = serve.terminate();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    serve = Serve::start(&flags, &envs);
    let (good, _) = take(fetch(&serve, route, 4), "after a restart");
    assert_eq!(good, 4);
    let (status, stderr) = serve.terminate();
    assert!(status.success(), "{status:?}: {stderr}");
}

// ---------------------------------------------------------------------------------------
// A read-only file system.

/// A read-only file system before a run: `next` (both generators) and `segment next` on a
/// store used before exit 1 with no ID, naming the file, saying it is read-only and to make
/// it writable; a store never used says its folder must be made writable. Once writable,
/// runs succeed and repeat nothing.
#[test]
fn a_read_only_file_system_is_an_error_naming_the_file_and_what_to_do() {
    let Some(disk) =
        Tmpfs::mount("a_read_only_file_system_is_an_error_naming_the_file_and_what_to_do")
    else {
        return;
    };
    let store = disk.store().display().to_string();
    let mut seen = Seen::default();
    let mut segments = Seen::default();
    seen.add(
        &ok_ids(&disk.run(&["next", "-n", "1000"]), "first"),
        "the first run",
    );
    common::success_stdout(&disk.run(&["segment", "create", "--tag", "t", "--step", "100"]));
    let runs: [&[&str]; 3] = [
        &["next", "-n", "5"],
        &["next", "-n", "5", "--generator", "default"],
        &["segment", "next", "--tag", "t", "-n", "5"],
    ];
    disk.remount("ro");
    for run in runs {
        assert_failed_with(
            &disk.run(run),
            &[&store, "read-only", "make it writable"],
            &format!("{run:?} on a read-only file system"),
        );
    }
    let never_used = disk.path().join("other.sqlite3");
    let out = disk
        .command(&["next", "-n", "5"])
        .env("UIDGEN_WORKER_DB", &never_used)
        .output()
        .unwrap();
    assert_failed_with(
        &out,
        &[
            &never_used.display().to_string(),
            "make its folder writable",
        ],
        "a new store on a read-only file system",
    );
    disk.remount("rw");
    for run in runs {
        let what = format!("{run:?} once writable");
        let ids = ok_ids(&disk.run(run), &what);
        assert_eq!(ids.len(), 5, "{what}");
        note(run, &ids, &what, &mut seen, &mut segments);
    }
}

// ---------------------------------------------------------------------------------------
// Damaged files.

/// Each file damaged in turn, on one machine:
/// - a state file with a line uidgen does not write: the run fails naming the state file,
///   the line, and "fix or remove the line"; with the line removed it goes on;
/// - the state file emptied, then removed: runs go on from the store's own marks (no
///   repeat), and a removed one is said once at INFO ("keeps no memory of this store");
/// - the lock file beside it filled with garbage: no matter;
/// - `workers.sqlite3` overwritten with garbage, or with its pages after the first
///   scrambled (malformed): the run fails naming the file and saying to restore it or run
///   `uidgen store repair --store PATH` (not a bare driver code); following that advice
///   (move it aside, repair) the next run goes on and repeats nothing.
#[test]
fn each_file_damaged_in_turn_says_what_to_do_and_nothing_repeats() {
    let machine = Machine::new();
    let (store, memory) = (machine_store(&machine), machine_memory(&machine));
    let shown = store.display().to_string();
    let mut seen = Seen::default();
    let mut run = |what: &str, log: Option<&str>| -> Output {
        let mut cmd = machine.command(&["next", "-n", "1000"]);
        if let Some(level) = log {
            cmd.env("RUST_LOG", level);
        }
        let out = cmd.output().unwrap();
        if out.status.success() {
            seen.add(&whole_lines(&out.stdout, what), what);
        }
        out
    };
    common::success_stdout(&run("the first run", None));
    let state = state_file(&memory);
    let original = std::fs::read_to_string(&state).unwrap();

    // A line uidgen does not write.
    let lines = original.lines().count();
    std::fs::write(&state, format!("{original}mark\tdefault\tzero\tmany\n")).unwrap();
    let out = run("a bad line", None);
    assert_failed_with(
        &out,
        &[
            &state.display().to_string(),
            &format!("line {} is not one uidgen writes", lines + 1),
            "fix or remove the line",
        ],
        "a state file with a bad line",
    );
    std::fs::write(&state, &original).unwrap();
    common::success_stdout(&run("the line removed", None));

    // Emptied, then removed.
    File::create(&state).unwrap();
    let out = run("an empty state file", Some("info"));
    common::success_stdout(&out);
    assert!(
        stderr_of(&out).contains("keeps no memory of this store"),
        "an emptied state file is said at INFO: {}",
        stderr_of(&out)
    );
    std::fs::remove_file(&state).unwrap();
    let out = run("a removed state file", Some("info"));
    common::success_stdout(&out);
    assert_eq!(
        stderr_of(&out)
            .matches("keeps no memory of this store")
            .count(),
        1,
        "the INFO line once: {}",
        stderr_of(&out)
    );
    assert!(state.exists(), "the state file was not written again");
    let out = run("the run after", Some("info"));
    assert!(
        !stderr_of(&out).contains("keeps no memory"),
        "{}",
        stderr_of(&out)
    );

    // The lock file.
    std::fs::write(state.with_extension("lock"), b"\x00garbage\xff").unwrap();
    common::success_stdout(&run("a lock file with garbage", None));

    // The store: garbage, then malformed pages.
    let good = std::fs::read(&store).unwrap();
    let garbage: Vec<u8> = (0..good.len() as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut malformed = good.clone();
    for (i, byte) in malformed.iter_mut().enumerate().skip(4096) {
        *byte = (i as u8).wrapping_mul(31).wrapping_add(7);
    }
    let repair = format!("uidgen store repair --store {shown}");
    for (damage, bytes) in [("garbage", &garbage), ("malformed pages", &malformed)] {
        std::fs::write(&store, bytes).unwrap();
        let what = format!("workers.sqlite3 with {damage}");
        let out = run(&what, None);
        assert_failed_with(
            &out,
            &[&shown, "damaged", "Restore it from a backup", &repair],
            &what,
        );
        // The driver's code may follow the advice, never stand in for it.
        let err = stderr_of(&out);
        let advice = err.find("Restore it from a backup").unwrap();
        assert!(
            !err[..advice].contains("Error code"),
            "{what}: the driver's code comes before the advice: {err}"
        );
    }
    // The advice: move it aside, repair, run.
    std::fs::rename(&store, store.with_extension("damaged")).unwrap();
    let out = machine
        .command(&["store", "repair", "--store", &shown])
        .output()
        .unwrap();
    let said = common::success_stdout(&out);
    assert!(said.contains("repaired"), "{said}");
    let out = run("after the repair", None);
    common::success_stdout(&out);
    let out = run("the run after the repair", None);
    common::success_stdout(&out);
}

// ---------------------------------------------------------------------------------------
// SIGKILL.

/// A small xorshift generator: the rounds' delays, from a seed printed on stderr
/// (`DISK_FAULTS_SEED` to replay one).
struct Random(u64);

impl Random {
    fn new() -> Self {
        let seed = std::env::var("DISK_FAULTS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            })
            | 1;
        eprintln!("DISK_FAULTS_SEED={seed}");
        Random(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// SIGKILL at random moments: 30 rounds of `next -n 2000000`, each killed after 0–300 ms,
/// on the 64-IDs-a-millisecond layout (each run borrows up to the 5 s cap ahead of the
/// clock, so it records its mark ahead all the time) with a 1 s lease (so the worker IDs
/// of killed runs lapse and are taken again within the test); on a tmpfs, every other
/// round has the disk filling up at a random moment before the kill. What each round
/// printed before the kill (its whole lines) rises, no ID repeats across the rounds, no
/// run panics, and a normal run at the end succeeds and repeats nothing.
#[test]
fn sigkill_at_random_moments_with_and_without_a_filling_disk_repeats_nothing() {
    let disk = Tmpfs::mount("sigkill_at_random_moments (the rounds with a filling disk)");
    let machine = Machine::new();
    let command = |args: &[&str]| match &disk {
        Some(disk) => disk.command(args),
        None => machine.command(args),
    };
    let mut random = Random::new();
    let mut all: Vec<u64> = Vec::new();
    let mut kinds = [0usize; 3];
    for round in 0..30 {
        let filling = disk.as_ref().filter(|_| round % 2 == 1);
        let what = format!(
            "round {round}{}",
            if filling.is_some() { " (filling)" } else { "" }
        );
        let kill_after = random.below(301);
        let fill_after = Duration::from_millis(random.below(kill_after + 1));
        let kill_after = Duration::from_millis(kill_after);
        let running = Running::spawn(command(&args(
            &["next", "-n", "2000000", "--lease-ttl", "1"],
            &SLOW_LAYOUT,
        )));
        let started = Instant::now();
        let filler = filling.map(|disk| {
            let path = disk.path().to_owned();
            std::thread::spawn(move || {
                std::thread::sleep(fill_after);
                fill(&path, round);
            })
        });
        std::thread::sleep(kill_after.saturating_sub(started.elapsed()));
        let (status, stdout, stderr) = running.kill();
        if let Some(filler) = filler {
            filler.join().unwrap();
        }
        if let Some(disk) = filling {
            disk.free();
        }
        let ids = whole_lines(&stdout, &what);
        assert_increasing(&ids, &what);
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        match status.code() {
            None => kinds[0] += 1,
            Some(0) => {
                assert_eq!(ids.len(), 2_000_000, "{what}: {stderr}");
                kinds[1] += 1;
            }
            Some(code) => {
                assert_eq!(code, 1, "{what}: {stderr}");
                assert!(
                    filling.is_some(),
                    "{what}: failed with room on the disk: {stderr}"
                );
                assert!(stderr.contains("uidgen: "), "{what}: {stderr}");
                kinds[2] += 1;
            }
        }
        all.extend(ids);
    }
    let out = command(&args(&["next", "-n", "100000"], &SLOW_LAYOUT))
        .output()
        .unwrap();
    let last = ok_ids(&out, "the final run");
    assert_eq!(last.len(), 100_000);
    all.extend(last);
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(
        all.len(),
        count,
        "{} of {count} IDs repeated across the rounds",
        count - all.len()
    );
    eprintln!(
        "{count} IDs; {} rounds killed, {} finished first, {} failed on the full disk",
        kinds[0], kinds[1], kinds[2]
    );
    assert!(
        kinds[0] >= 15,
        "most rounds must be killed mid-run: {kinds:?}"
    );
}
