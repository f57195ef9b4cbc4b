//! A private instance of the host's tracefs for one test (root, real
//! tracefs), through the tracefs crate like every other access.

use std::path::Path;
use std::process::Output;
use ustack_tracefs::{Instance, OwnedInstance, Tracefs};

use crate::skip::skip_unless_ci;

/// A tracefs instance `TAG_PID` that the test owns: it sets it up with
/// [`TestInstance::write`] and reads it through [`Instance`] (`Deref`).
/// Dropping it turns tracing off and removes the instance, unless
/// `trace-cmd extract` removed it already; removing it puts back everything
/// the test changed in it (events, filters and options are per instance).
pub struct TestInstance {
    inst: Option<OwnedInstance>,
}

impl TestInstance {
    /// Creates the instance `TAG_PID` on the host's tracefs. `None` when
    /// this machine cannot (not root, no tracefs): [`skip_unless_ci`] has
    /// then said why (under `CI=true` the test fails there instead), and
    /// the caller returns.
    #[track_caller]
    pub fn create(tag: &str) -> Option<TestInstance> {
        if !nix::unistd::geteuid().is_root() {
            skip_unless_ci("needs root for a tracefs instance");
            return None;
        }
        let fs = match Tracefs::find() {
            Ok(fs) => fs,
            Err(e) => {
                skip_unless_ci(&format!("needs tracefs ({e})"));
                return None;
            }
        };
        let name = format!("{tag}_{}", std::process::id());
        // What a killed run of this very process id left behind.
        let _ = fs.remove_instance(&name);
        let inst = fs
            .create_instance(&name)
            .unwrap_or_else(|e| panic!("cannot create a tracefs instance: {e}"));
        Some(TestInstance { inst: Some(inst) })
    }

    /// The instance's name.
    pub fn name(&self) -> &str {
        self.instance().name().expect("a named instance")
    }

    fn instance(&self) -> &Instance {
        self.inst.as_ref().expect("instance present until drop")
    }

    /// Writes `value` to the instance's file `rel` (one write, truncating);
    /// a refusal fails the test.
    pub fn write(&self, rel: &str, value: &str) {
        self.instance()
            .write(rel, value)
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// `trace-cmd extract` of this instance into `out`, fenced against the
    /// top instance's resets ([`crate::top::trace_cmd_extract`]); it fails
    /// the test when trace-cmd fails. trace-cmd removes the instance.
    pub fn extract(&self, out: &Path) -> Output {
        let o = crate::top::trace_cmd_extract(self.name(), out);
        assert!(
            o.status.success() && out.exists(),
            "trace-cmd extract -B {} failed: {}",
            self.name(),
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }
}

impl std::ops::Deref for TestInstance {
    type Target = Instance;
    fn deref(&self) -> &Instance {
        self.instance()
    }
}

impl Drop for TestInstance {
    fn drop(&mut self) {
        let Some(inst) = self.inst.take() else {
            return;
        };
        if !inst.dir().exists() {
            // trace-cmd extract removes the instances it reads.
            let _ = inst.keep();
            return;
        }
        let _ = inst.set_tracing_on(false);
        let name = inst.name().unwrap_or_default().to_string();
        if let Err(e) = inst.remove() {
            eprintln!("warning: cannot remove tracefs instance {name}: {e}");
        }
    }
}
