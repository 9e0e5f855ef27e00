//! Workloads: the programs users run, as tasks on the simulated machine.

pub mod dd;
pub mod fs_mark;

use crate::kernel::{Body, Kernel};
use crate::scenario::JobKind;

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
                            self.tasks[pid].gen += 1;
                            let gen = self.tasks[pid].gen;
                            self.q.schedule(
                                job.start,
                                crate::kernel::Ev::Wake {
                                    pid: pid as u32,
                                    gen,
                                },
                            );
                        }
                    }
                }
                &JobKind::Dd { bs, size } => {
                    let sb = job.filesystem;
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
                        let pid = self.new_task("dd".into(), Body::Dd(w), Some(ji));
                        let at = job.start;
                        self.tasks[pid].gen += 1;
                        let gen = self.tasks[pid].gen;
                        self.q.schedule(
                            at,
                            crate::kernel::Ev::Wake {
                                pid: pid as u32,
                                gen,
                            },
                        );
                    }
                }
            }
        }
    }
}
