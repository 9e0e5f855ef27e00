//! Workloads: the programs users run, as tasks on the simulated machine.

pub mod dd;
pub mod fio;
pub mod fs_mark;
pub mod simoop;

use crate::kernel::{Action, Body, Kernel, Pid};
use crate::scenario::JobKind;

/// The parent process of a job's tasks (a shell loop, or `wbsim live`):
/// it forks and execs them one after another, spending
/// `machine.cost.fork` of CPU on each, so with busy CPUs the later ones
/// start late. On the host rig, 100 dd bs=1M writers were all running
/// only after 0.55-0.65 s, 10 after 0.05-0.1 s.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The tasks still to start, in order (a job's tasks are created one
    /// after another, so their pids are consecutive).
    pub pending: std::ops::Range<Pid>,
    /// The CPU for the next child's fork has been spent.
    pub forked: bool,
}

/// A job's task, not yet started: its first wakeup.
pub(crate) fn start_at(k: &mut Kernel, pid: Pid, at: crate::sim::Ns) {
    k.tasks[pid].gen += 1;
    let gen = k.tasks[pid].gen;
    k.q.schedule(
        at,
        crate::kernel::Ev::Wake {
            pid: pid as u32,
            gen,
        },
    );
}

impl Kernel {
    /// Create every job's tasks; each starts at its job's `start` time.
    pub fn workload_init(&mut self) {
        self.fsmark = vec![fs_mark::FsMarkJob::default(); self.sc.jobs.len()];
        for (ji, job) in self.sc.jobs.clone().iter().enumerate() {
            match &job.kind {
                JobKind::FsMark(args) => {
                    let sb = job.filesystem;
                    let agcount = self.sc.filesystems[sb].agcount;
                    let j = &mut self.fsmark[ji];
                    j.threads = args.threads();
                    j.args = Some(args.clone());
                    j.start = job.start;
                    for (di, _dir) in args.dirs.iter().enumerate() {
                        for _ in 0..args.threads_per_dir {
                            // XFS puts each new directory in the next AG
                            let ag = di as u32 % agcount;
                            let t = fs_mark::FsMarkThread::new(ji, sb, ag, args);
                            let pid = self.new_task(
                                "fs_mark".into(),
                                Body::FsMark(Box::new(t)),
                                Some(ji),
                            );
                            start_at(self, pid, job.start);
                        }
                    }
                }
                // the fio engine's tasks: fio_init below
                JobKind::Fio(_) => {}
                JobKind::Simoop(b) => self.simoop_init(ji, &b.0, &b.1, job.start),
                &JobKind::Dd { bs, size } => {
                    let sb = job.filesystem;
                    let first = self.tasks.len();
                    for _ in 0..job.numjobs {
                        let ino = self.create_inode(sb);
                        let ps = self.page_size();
                        let end_time = job.runtime.map(|r| job.start + r);
                        let w = dd::DdWriter::new(
                            ino,
                            self.sbs[sb].wb,
                            bs,
                            size,
                            end_time,
                            ps,
                            self.sbs[sb].max_folio_pages,
                        );
                        self.new_task("dd".into(), Body::Dd(w), Some(ji));
                    }
                    let children = first..self.tasks.len();
                    if self.sc.machine.cost.fork == 0 {
                        for pid in children {
                            start_at(self, pid, job.start);
                        }
                    } else {
                        let l = Launcher {
                            pending: children,
                            forked: false,
                        };
                        let pid = self.new_task("sh".into(), Body::Launcher(l), None);
                        // a user task (in the session's autogroup), not in
                        // the job's figures
                        self.tasks[pid].kthread = false;
                        start_at(self, pid, job.start);
                    }
                }
            }
        }
        // fio's clones, after the other jobs' tasks (workload/fio/engine.rs)
        if self
            .sc
            .jobs
            .iter()
            .any(|j| matches!(j.kind, JobKind::Fio(_)))
        {
            self.fio_init();
        }
    }
}

impl Kernel {
    /// The launcher after a burst: start the child whose fork it has just
    /// paid for, then fork the next one, or exit after the last.
    pub fn launcher_step(&mut self, l: &mut Launcher) -> Action {
        if std::mem::take(&mut l.forked) {
            let child = l.pending.next().expect("a fork paid for a child");
            self.start_task(child);
        }
        if l.pending.is_empty() {
            return Action::Exit;
        }
        l.forked = true;
        Action::Cpu {
            user: 0,
            sys: self.sc.machine.cost.fork,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::{Body, Kernel};
    use crate::scenario::Scenario;

    /// Ten dd writers of one 4 KiB block each on a 2-CPU machine, run for
    /// 35 ms.
    fn run(fork: &str) -> Kernel {
        let text = format!(
            "[machine]\ncpus = 2\n[machine.cost]\nfork = \"{fork}\"\n\
             [devices.d]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"d\"\n\
             [jobs.dd]\nnumjobs = 10\nbs = \"4k\"\nsize = \"4k\"\n\
             [run]\nduration = \"35ms\"\nwarmup = \"0s\"\n"
        );
        let sc = Scenario::load_str(&text, "t.toml", "t", &[]).unwrap();
        let mut k = Kernel::new(sc, crate::trace::Tracer::disabled());
        k.run(|_, _| {});
        k
    }

    fn started(k: &Kernel) -> usize {
        k.tasks
            .iter()
            .filter(|t| matches!(t.body, Some(Body::Dd(_))) && t.stime > 0)
            .count()
    }

    #[test]
    fn launcher_starts_tasks_one_fork_at_a_time() {
        // without a fork cost every writer starts at once
        let k = run("0s");
        assert_eq!(started(&k), 10);
        assert!(!k.tasks.iter().any(|t| t.comm == "sh"));
        // 10 ms a fork: children start at 10, 20 and 30 ms
        let k = run("10ms");
        assert_eq!(started(&k), 3);
        let sh = k.tasks.iter().find(|t| t.comm == "sh").expect("launcher");
        // a user task outside the job: not in the job's figures
        assert!(!sh.kthread && sh.job.is_none());
        assert!(sh.stime >= 30_000_000, "launcher ran {} ns", sh.stime);
    }
}
