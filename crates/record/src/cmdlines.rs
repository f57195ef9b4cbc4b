//! The command names a recording saves (the trace.dat's CMDLINES).
//!
//! The kernel's `saved_cmdlines` is a best-effort cache shared by
//! everything that traces (128 tasks before 6.8, a page's worth since;
//! a save at `sched_switch` is skipped when its lock is busy): a process
//! that exited before the recording ends may have been evicted, or saved
//! under an older name, and the report then shows `<...>` or that name.
//! A recording therefore keeps every `saved_cmdlines` it reads while it
//! runs, and the names its
//! [`crate::ProcWatch`] saw tasks take (at creation, exec and rename),
//! which win: they are the latest names of the tasks they cover.

use std::collections::BTreeMap;

/// Command names by task id, merged from several sources.
#[derive(Debug, Default, Clone)]
pub struct Cmdlines {
    names: BTreeMap<u32, Vec<u8>>,
}

impl Cmdlines {
    /// Takes in one read of `saved_cmdlines` (`PID COMM` lines, the name
    /// may hold spaces): its names replace older ones of the same tasks.
    pub fn absorb(&mut self, saved: &[u8]) {
        for line in saved.split(|&b| b == b'\n') {
            let Some(sp) = line.iter().position(|&b| b == b' ') else {
                continue;
            };
            let pid = std::str::from_utf8(&line[..sp])
                .ok()
                .and_then(|p| p.parse::<u32>().ok());
            if let Some(pid) = pid {
                self.names.insert(pid, line[sp + 1..].to_vec());
            }
        }
    }

    /// Sets the name of `pid` from a kernel `comm` array (NUL-padded).
    /// An empty name is ignored.
    pub fn set_comm(&mut self, pid: u32, comm: &[u8]) {
        let n = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
        if n > 0 && !comm[..n].contains(&b'\n') {
            self.names.insert(pid, comm[..n].to_vec());
        }
    }

    /// The names in `saved_cmdlines` form, by task id.
    pub fn to_saved_cmdlines(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (pid, name) in &self.names {
            out.extend_from_slice(pid.to_string().as_bytes());
            out.push(b' ');
            out.extend_from_slice(name);
            out.push(b'\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_reads_and_comms_win_and_evicted_names_stay() {
        let mut c = Cmdlines::default();
        c.absorb(b"10 bash\n11 old name\n12 gone\n");
        c.absorb(b"11 new name\n13 kworker/0:1\ngarbage\nx y\n");
        c.set_comm(10, b"probe\0\0\0\0\0\0\0\0\0\0\0");
        c.set_comm(14, b"\0\0\0\0");
        assert_eq!(
            String::from_utf8(c.to_saved_cmdlines()).unwrap(),
            "10 probe\n11 new name\n12 gone\n13 kworker/0:1\n"
        );
    }
}
