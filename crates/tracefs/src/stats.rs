//! Reading `per_cpu/cpuN/stats`. The text is parsed by the trace-data crate,
//! which owns the format (it also reads it back from trace.dat CPUSTAT
//! options).

use crate::error::Result;
use crate::instance::Instance;

pub use ustack_tracedata::stats::CpuStats;

impl Instance {
    /// Reads and parses `per_cpu/cpuN/stats`.
    pub fn cpu_stats(&self, cpu: u32) -> Result<CpuStats> {
        let text = self.read_string(&format!("per_cpu/cpu{cpu}/stats"))?;
        Ok(CpuStats::parse(cpu, &text))
    }
}
