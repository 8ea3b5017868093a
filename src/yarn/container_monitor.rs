//! The container monitor: YARN's ContainersMonitorImpl and ProcfsBasedProcessTree for one
//! container's processes.
//!
//! Layer: yarn. Every `yarn.nodemanager.container-monitor.interval-ms` the container's
//! process tree is read from `/proc` (the root process, its descendants, and every process of
//! its process group) and its memory summed: resident memory (RSS) against the container's
//! allocation, virtual memory against the allocation times `yarn.nodemanager.vmem-pmem-ratio`.
//! [`check_memory`] decides, as YARN does, whether the container is beyond its physical
//! memory (with `yarn.nodemanager.pmem-check-enabled`): a tree over twice its limit at once,
//! or whose processes seen at an earlier check (age above 1) are over it, is killed with exit
//! status -104 (KILLED_EXCEEDED_PMEM) and YARN's diagnostics, the process-tree dump included.
//! The decision is a pure function of a [`TreeSnapshot`]; only [`read_tree`] reads `/proc`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::fs;

use crate::yarn::records::{exit_status, ContainerId};

/// A process as `/proc/<pid>/stat` and `/proc/<pid>/cmdline` describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    pub ppid: u32,
    /// Its process group.
    pub pgrp: u32,
    pub session: u32,
    /// The executable's name (`comm`).
    pub name: String,
    /// `R`, `S`, `Z` (a zombie: ended, not yet reaped), ...
    pub state: char,
    /// User-mode time in clock ticks.
    pub utime: u64,
    /// System time in clock ticks.
    pub stime: u64,
    /// Virtual memory in bytes.
    pub vmem: u64,
    /// Resident memory in pages.
    pub rss_pages: u64,
    /// The command line, each argument followed by a space (as YARN prints it).
    pub cmdline: String,
}

/// Parses the text of `/proc/<pid>/stat` (the command line is left empty).
pub fn parse_stat(text: &str) -> Option<ProcInfo> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let name = text.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some(ProcInfo {
        pid,
        name,
        state: fields.first()?.chars().next()?,
        ppid: num(1)? as u32,
        pgrp: num(2)? as u32,
        session: num(3)? as u32,
        utime: num(11)?,
        stime: num(12)?,
        vmem: num(20)?,
        rss_pages: num(21)?,
        cmdline: String::new(),
    })
}

/// The process `pid` now, without its command line; `None` if it is gone.
fn read_stat(pid: u32) -> Option<ProcInfo> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Fills in the command line of `info` (left empty if it cannot be read).
fn with_cmdline(mut info: ProcInfo) -> ProcInfo {
    if let Ok(raw) = fs::read(format!("/proc/{}/cmdline", info.pid)) {
        info.cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
    }
    info
}

/// The process `pid` now, `None` if it is gone.
pub fn read_process(pid: u32) -> Option<ProcInfo> {
    read_stat(pid).map(with_cmdline)
}

/// Every process of the machine now, without command lines (those that end while being
/// read are left out).
pub fn all_processes() -> Vec<ProcInfo> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// The processes of the container whose root process is `root` (the leader of its own
/// group): the root, its descendants, and the other members of its process group.
pub fn tree_of(root: u32, all: &[ProcInfo]) -> Vec<ProcInfo> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for p in all {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut members: BTreeSet<u32> = all.iter().filter(|p| p.pgrp == root).map(|p| p.pid).collect();
    if all.iter().any(|p| p.pid == root) {
        members.insert(root);
    }
    let mut queue: Vec<u32> = members.iter().copied().collect();
    while let Some(pid) = queue.pop() {
        for kid in children.get(&pid).into_iter().flatten() {
            if members.insert(*kid) {
                queue.push(*kid);
            }
        }
    }
    all.iter().filter(|p| members.contains(&p.pid)).cloned().collect()
}

/// The container's process tree read from `/proc` now, with command lines.
pub fn read_tree(root: u32) -> Vec<ProcInfo> {
    tree_of(root, &all_processes())
        .into_iter()
        .map(with_cmdline)
        .collect()
}

/// Whether a process of the group `pgid` still runs (zombies do not count).
pub fn group_has_live(pgid: u32) -> bool {
    all_processes().iter().any(|p| p.pgrp == pgid && p.state != 'Z')
}

/// The memory page size, by which resident pages become bytes.
pub fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// A container's process tree as the monitor remembers it between two checks: how many
/// checks each process has been seen at (its age; YARN's ProcessInfo age).
#[derive(Debug, Default)]
pub struct ProcessTree {
    ages: HashMap<u32, u32>,
}

/// One check's view of a container's processes, each with its age (1: first seen now).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeSnapshot {
    pub processes: Vec<(ProcInfo, u32)>,
    pub page_size: u64,
}

impl ProcessTree {
    /// The tree now: processes seen before are a check older; new ones are 1; the ended are
    /// forgotten.
    pub fn update(&mut self, processes: Vec<ProcInfo>, page_size: u64) -> TreeSnapshot {
        let mut ages = HashMap::new();
        let processes: Vec<(ProcInfo, u32)> = processes
            .into_iter()
            .map(|p| {
                let age = self.ages.get(&p.pid).map_or(1, |a| a + 1);
                ages.insert(p.pid, age);
                (p, age)
            })
            .collect();
        self.ages = ages;
        TreeSnapshot { processes, page_size }
    }
}

impl TreeSnapshot {
    /// Resident memory in bytes of the processes older than `age` (0: all).
    pub fn rss_bytes(&self, older_than: u32) -> u64 {
        self.processes
            .iter()
            .filter(|(_, age)| *age > older_than)
            .map(|(p, _)| p.rss_pages.saturating_mul(self.page_size))
            .sum()
    }

    /// Virtual memory in bytes of the processes older than `age` (0: all).
    pub fn vmem_bytes(&self, older_than: u32) -> u64 {
        self.processes
            .iter()
            .filter(|(_, age)| *age > older_than)
            .map(|(p, _)| p.vmem)
            .sum()
    }

    /// YARN's process-tree dump: a header line, then one line per process (by pid).
    pub fn dump(&self) -> String {
        let mut out = String::from(
            "\t|- PID PPID PGRPID SESSID CMD_NAME USER_MODE_TIME(MILLIS) SYSTEM_TIME(MILLIS) VMEM_USAGE(BYTES) RSSMEM_USAGE(PAGES) FULL_CMD_LINE\n",
        );
        let by_pid: BTreeMap<u32, &ProcInfo> = self.processes.iter().map(|(p, _)| (p.pid, p)).collect();
        for p in by_pid.values() {
            let _ = writeln!(
                out,
                "\t|- {} {} {} {} ({}) {} {} {} {} {}",
                p.pid, p.ppid, p.pgrp, p.session, p.name, p.utime, p.stime, p.vmem, p.rss_pages, p.cmdline
            );
        }
        out
    }
}

/// A byte count as Hadoop's `TraditionalBinaryPrefix.long2String(n, "", 1)` writes it:
/// `512`, `1 K`, `300 M`, `1.5 G` (a unit follows in the message).
pub fn binary_prefix(n: u64) -> String {
    const SYMBOLS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if n < 1024 {
        return n.to_string();
    }
    let mut i = 0;
    while i + 1 < SYMBOLS.len() && n >= 1u64 << (10 * (i + 2)) {
        i += 1;
    }
    let shift = 10 * (i + 1);
    if n & ((1u64 << shift) - 1) == 0 {
        return format!("{} {}", n >> shift, SYMBOLS[i]);
    }
    let mut s = format!("{:.1}", n as f64 / (1u64 << shift) as f64);
    if s.starts_with("1024") && i + 1 < SYMBOLS.len() {
        i += 1;
        s = format!("{:.1}", n as f64 / (1u64 << (10 * (i + 1))) as f64);
    }
    format!("{s} {}", SYMBOLS[i])
}

/// The limits one container is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimits {
    /// Its allocation in bytes.
    pub pmem: u64,
    /// Its allocation times `yarn.nodemanager.vmem-pmem-ratio`.
    pub vmem: u64,
    /// `yarn.nodemanager.pmem-check-enabled`.
    pub pmem_check: bool,
}

/// The monitor's verdict on a container beyond its memory: the exit status it completes with
/// and YARN's diagnostics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryKill {
    pub exit_status: i32,
    pub diagnostics: String,
}

/// YARN's over-limit rule: beyond twice the limit at once, or the processes of an earlier
/// check beyond it (a process that just forked is given one more interval).
pub fn over_limit(current: u64, aged: u64, limit: u64) -> bool {
    current > limit.saturating_mul(2) || aged > limit
}

/// Whether the container of `root` is killed for its physical memory, and why.
pub fn check_memory(
    container_id: &ContainerId,
    root: u32,
    tree: &TreeSnapshot,
    limits: &MemoryLimits,
) -> Option<MemoryKill> {
    if !limits.pmem_check {
        return None;
    }
    let (pmem, vmem) = (tree.rss_bytes(0), tree.vmem_bytes(0));
    if !over_limit(pmem, tree.rss_bytes(1), limits.pmem) {
        return None;
    }
    let delta = pmem.saturating_sub(limits.pmem);
    let usage = format!(
        "{}B of {}B physical memory used; {}B of {}B virtual memory used",
        binary_prefix(pmem),
        binary_prefix(limits.pmem),
        binary_prefix(vmem),
        binary_prefix(limits.vmem)
    );
    Some(MemoryKill {
        exit_status: exit_status::KILLED_EXCEEDED_PMEM,
        diagnostics: format!(
            "Container [pid={root},containerID={container_id}] is running {delta}B beyond the 'PHYSICAL' memory limit. Current usage: {usage}. Killing container.\nDump of the process-tree for {container_id} :\n{}",
            tree.dump()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yarn::records::{ApplicationAttemptId, ApplicationId};

    fn container() -> ContainerId {
        ContainerId {
            attempt: ApplicationAttemptId {
                app: ApplicationId {
                    cluster_timestamp: 1700000000000,
                    id: 3,
                },
                attempt: 1,
            },
            id: 2,
        }
    }

    fn proc(pid: u32, ppid: u32, pgrp: u32, rss_pages: u64) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgrp,
            session: pgrp,
            name: "sh".into(),
            state: 'S',
            utime: 3,
            stime: 1,
            vmem: rss_pages * 4096 * 2,
            rss_pages,
            cmdline: format!("/bin/sh -c run{pid} "),
        }
    }

    const MIB_PAGES: u64 = (1 << 20) / 4096;

    fn limits(mb: u64) -> MemoryLimits {
        MemoryLimits {
            pmem: mb << 20,
            vmem: ((mb << 20) as f64 * 2.1) as u64,
            pmem_check: true,
        }
    }

    #[test]
    fn stat_lines_parse_even_with_odd_names() {
        let line = "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194304 100 0 0 0 7 2 0 0 20 0 3 0 12345 10485760 256 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let p = parse_stat(line).unwrap();
        assert_eq!((p.pid, p.ppid, p.pgrp, p.session), (4242, 1, 4242, 4242));
        assert_eq!(p.name, "my (odd) prog");
        assert_eq!((p.state, p.utime, p.stime), ('S', 7, 2));
        assert_eq!((p.vmem, p.rss_pages), (10485760, 256));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_tree_is_the_root_its_descendants_and_its_group() {
        let all = vec![
            proc(100, 1, 100, 1),
            proc(101, 100, 100, 1),
            // A descendant that left the group (setsid) is still the container's.
            proc(102, 101, 102, 1),
            // A member of the group whose parent died (reparented to init).
            proc(103, 1, 100, 1),
            proc(200, 1, 200, 1),
            proc(201, 200, 200, 1),
        ];
        let pids: Vec<u32> = tree_of(100, &all).iter().map(|p| p.pid).collect();
        assert_eq!(pids, vec![100, 101, 102, 103]);
        assert!(tree_of(999, &all).is_empty());
    }

    #[test]
    fn ages_grow_with_each_check_and_the_ended_are_forgotten() {
        let mut tree = ProcessTree::default();
        let first = tree.update(vec![proc(1, 0, 1, MIB_PAGES)], 4096);
        assert_eq!(first.processes[0].1, 1);
        assert_eq!(first.rss_bytes(0), 1 << 20);
        assert_eq!(first.rss_bytes(1), 0, "nothing is older than one check yet");
        let second = tree.update(vec![proc(1, 0, 1, MIB_PAGES), proc(2, 1, 1, MIB_PAGES)], 4096);
        let ages: Vec<u32> = second.processes.iter().map(|(_, a)| *a).collect();
        assert_eq!(ages, vec![2, 1]);
        assert_eq!(second.rss_bytes(1), 1 << 20);
        let third = tree.update(vec![proc(2, 1, 1, MIB_PAGES)], 4096);
        assert_eq!(third.processes[0].1, 2);
        let fourth = tree.update(vec![proc(1, 0, 1, MIB_PAGES)], 4096);
        assert_eq!(fourth.processes[0].1, 1, "a pid seen again after it ended is new");
    }

    #[test]
    fn a_tree_over_twice_its_limit_is_killed_at_once_else_after_one_more_check() {
        let id = container();
        let mut tree = ProcessTree::default();
        // 150 MB against 100: over, but only new processes; wait one interval.
        let fresh = tree.update(vec![proc(10, 1, 10, 150 * MIB_PAGES)], 4096);
        assert_eq!(check_memory(&id, 10, &fresh, &limits(100)), None);
        // Seen again, still over: killed.
        let aged = tree.update(vec![proc(10, 1, 10, 150 * MIB_PAGES)], 4096);
        let kill = check_memory(&id, 10, &aged, &limits(100)).expect("killed");
        assert_eq!(kill.exit_status, -104);
        // Within its limit: left alone.
        let mut calm = ProcessTree::default();
        calm.update(vec![proc(10, 1, 10, 50 * MIB_PAGES)], 4096);
        let calm = calm.update(vec![proc(10, 1, 10, 100 * MIB_PAGES)], 4096);
        assert_eq!(
            check_memory(&id, 10, &calm, &limits(100)),
            None,
            "at the limit is within it"
        );
        // Over twice the limit: killed at the first check.
        let mut burst = ProcessTree::default();
        let burst = burst.update(vec![proc(10, 1, 10, 201 * MIB_PAGES)], 4096);
        assert!(check_memory(&id, 10, &burst, &limits(100)).is_some());
        // With the check off, nothing is killed.
        let off = MemoryLimits {
            pmem_check: false,
            ..limits(100)
        };
        assert_eq!(check_memory(&id, 10, &burst, &off), None);
    }

    #[test]
    fn the_diagnostics_are_yarns_with_the_process_tree_dump() {
        let id = container();
        let mut tree = ProcessTree::default();
        let mut root = proc(4869, 4867, 4869, 1000);
        root.name = "bash".into();
        root.cmdline = "/bin/bash -c run ".into();
        root.vmem = 108625920;
        let mut child = proc(5088, 4869, 4869, 300 * MIB_PAGES);
        child.name = "java".into();
        child.utime = 1045;
        child.stime = 130;
        child.vmem = 2005045248;
        child.cmdline = "/usr/bin/java -Xmx204m Main ".into();
        tree.update(vec![child.clone(), root.clone()], 4096);
        let snapshot = tree.update(vec![child, root], 4096);
        let kill = check_memory(&id, 4869, &snapshot, &limits(256)).expect("over its limit at two checks");
        let rss = 300 * (1 << 20) + 1000 * 4096u64;
        assert_eq!(
            kill.diagnostics,
            format!(
                "Container [pid=4869,containerID=container_1700000000000_0003_01_000002] is running {}B beyond the 'PHYSICAL' memory limit. Current usage: 303.9 MB of 256 MB physical memory used; 2.0 GB of 537.6 MB virtual memory used. Killing container.\n\
                 Dump of the process-tree for container_1700000000000_0003_01_000002 :\n\
                 \t|- PID PPID PGRPID SESSID CMD_NAME USER_MODE_TIME(MILLIS) SYSTEM_TIME(MILLIS) VMEM_USAGE(BYTES) RSSMEM_USAGE(PAGES) FULL_CMD_LINE\n\
                 \t|- 4869 4867 4869 4869 (bash) 3 1 108625920 1000 /bin/bash -c run \n\
                 \t|- 5088 4869 4869 4869 (java) 1045 130 2005045248 76800 /usr/bin/java -Xmx204m Main \n",
                rss - (256 << 20)
            )
        );
    }

    #[test]
    fn sizes_are_written_with_hadoops_binary_prefixes() {
        assert_eq!(binary_prefix(0), "0");
        assert_eq!(binary_prefix(1023), "1023");
        assert_eq!(binary_prefix(1024), "1 K");
        assert_eq!(binary_prefix(256 << 20), "256 M");
        assert_eq!(binary_prefix(1 << 30), "1 G");
        assert_eq!(binary_prefix(3 << 29), "1.5 G");
        assert_eq!(binary_prefix((286.8 * (1u64 << 20) as f64) as u64), "286.8 M");
        assert_eq!(
            binary_prefix((1 << 30) - 1),
            "1.0 G",
            "1024.0 M rounds up to the next prefix"
        );
    }

    #[test]
    fn the_tests_own_process_is_read_from_proc() {
        let me = std::process::id();
        let info = read_process(me).expect("this process");
        assert_eq!(info.pid, me);
        assert!(info.rss_pages > 0);
        assert!(info.vmem >= info.rss_pages * page_size());
        assert!(!info.cmdline.is_empty());
        let pgrp = info.pgrp;
        let tree = tree_of(pgrp, &all_processes());
        assert!(tree.iter().any(|p| p.pid == me), "a member of its own group");
        assert!(group_has_live(pgrp));
        assert_eq!(read_process(u32::MAX), None);
    }
}
