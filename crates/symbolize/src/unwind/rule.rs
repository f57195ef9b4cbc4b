//! One unwind rule (a row of a CFI table), kept in a compact form the
//! cache can hold, and its evaluation against registers and a snapshot.

use gimli::{
    CfaRule, Encoding, EndianSlice, Evaluation, EvaluationResult, Format, LittleEndian, Location,
    Register, RegisterRule, UnwindSection, UnwindTableRow, Value,
};

use super::Snapshot;

/// DWARF register numbers of x86_64 (System V ABI).
pub(crate) const RBP: u16 = 6;
/// The stack pointer.
pub(crate) const RSP: u16 = 7;
/// The return address column (rip).
pub(crate) const RIP: u16 = 16;
/// Registers tracked: rax..r15 and rip.
pub(crate) const NREGS: usize = 17;

/// Register values known at a frame (`None`: not known).
pub(crate) type Regs = [Option<u64>; NREGS];

/// Where a register's caller value is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Loc {
    /// Not saved: the caller's value is this frame's.
    Same,
    /// The caller's value is not recoverable (the outermost frame's
    /// return address).
    Undefined,
    /// Saved at CFA + n.
    At(i64),
    /// The value is CFA + n.
    Val(i64),
    /// In another register.
    Reg(u16),
    /// Saved at the address an expression computes (CFA pushed first).
    AtExpr(Box<[u8]>),
    /// The value an expression computes (CFA pushed first).
    ValExpr(Box<[u8]>),
    /// A constant.
    Const(u64),
}

/// How the canonical frame address is computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cfa {
    /// Register + offset.
    RegOff(u16, i64),
    /// A DWARF expression.
    Expr(Box<[u8]>),
}

/// The unwind rule of one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) cfa: Cfa,
    /// The return address.
    pub(crate) ra: Loc,
    /// Registers other than the return address that are not `Same`.
    pub(crate) regs: Vec<(u16, Loc)>,
    /// The frame is a signal trampoline: the caller's ip is where the
    /// signal interrupted it, not a return address.
    pub(crate) signal: bool,
}

/// Why one step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fail {
    /// A load outside the snapshot.
    Outside,
    /// A register the rule needs is not known.
    UnknownRegister,
    /// An expression the evaluator does not handle.
    BadExpression,
    /// The return address is undefined: this is the outermost frame.
    Outermost,
}

impl Rule {
    pub(crate) fn from_row<'a, S: UnwindSection<EndianSlice<'a, LittleEndian>>>(
        row: &UnwindTableRow<usize>,
        section: &S,
        ra_reg: Register,
        signal: bool,
    ) -> Option<Rule>
    where
        S::Offset: gimli::UnwindOffset<usize>,
    {
        let bytes = |e: &gimli::UnwindExpression<usize>| -> Option<Box<[u8]>> {
            Some(e.get(section).ok()?.0.slice().into())
        };
        let cfa = match row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } => Cfa::RegOff(register.0, *offset),
            CfaRule::Expression(e) => Cfa::Expr(bytes(e)?),
        };
        let loc = |r: &RegisterRule<usize>| -> Option<Loc> {
            Some(match r {
                RegisterRule::Undefined => Loc::Undefined,
                RegisterRule::SameValue => Loc::Same,
                RegisterRule::Offset(n) => Loc::At(*n),
                RegisterRule::ValOffset(n) => Loc::Val(*n),
                RegisterRule::Register(r) => Loc::Reg(r.0),
                RegisterRule::Expression(e) => Loc::AtExpr(bytes(e)?),
                RegisterRule::ValExpression(e) => Loc::ValExpr(bytes(e)?),
                RegisterRule::Constant(c) => Loc::Const(*c),
                RegisterRule::Architectural => return None,
                _ => return None,
            })
        };
        let ra = loc(&row.register(ra_reg))?;
        let mut regs = Vec::new();
        for (r, rule) in row.registers() {
            if *r != ra_reg && usize::from(r.0) < NREGS {
                let l = loc(rule)?;
                if l != Loc::Same {
                    regs.push((r.0, l));
                }
            }
        }
        Some(Rule {
            cfa,
            ra,
            regs,
            signal,
        })
    }

    /// The caller's registers (the return address in `RIP`, the CFA in
    /// `RSP`) from this frame's.
    #[inline]
    pub(crate) fn apply(&self, regs: &Regs, snap: &Snapshot<'_>) -> Result<Regs, Fail> {
        let cfa = match &self.cfa {
            Cfa::RegOff(r, off) => reg(regs, *r)?.wrapping_add(*off as u64),
            Cfa::Expr(e) => eval(e, regs, snap, None)?,
        };
        let mut out = *regs;
        out[usize::from(RSP)] = Some(cfa);
        for (r, l) in &self.regs {
            out[usize::from(*r)] = recover(l, *r, cfa, regs, snap)?;
        }
        out[usize::from(RIP)] = match recover(&self.ra, RIP, cfa, regs, snap)? {
            Some(ra) => Some(ra),
            None => return Err(Fail::Outermost),
        };
        Ok(out)
    }

    /// True when the CFA is `rbp + 16`: the frame has a frame pointer set
    /// up, so its return address is at `rbp + 8`.
    pub(crate) fn is_frame_pointer_frame(&self) -> bool {
        self.cfa == Cfa::RegOff(RBP, 16) && self.ra == Loc::At(-8)
    }
}

#[inline]
fn reg(regs: &Regs, r: u16) -> Result<u64, Fail> {
    regs.get(usize::from(r))
        .copied()
        .flatten()
        .ok_or(Fail::UnknownRegister)
}

/// The caller's value of register `r` under rule `l`; `None` for an
/// undefined one.
#[inline]
fn recover(
    l: &Loc,
    r: u16,
    cfa: u64,
    regs: &Regs,
    snap: &Snapshot<'_>,
) -> Result<Option<u64>, Fail> {
    Ok(Some(match l {
        Loc::Same => return Ok(regs[usize::from(r)]),
        Loc::Undefined => return Ok(None),
        Loc::At(n) => snap
            .read_u64(cfa.wrapping_add(*n as u64))
            .ok_or(Fail::Outside)?,
        Loc::Val(n) => cfa.wrapping_add(*n as u64),
        Loc::Reg(from) => reg(regs, *from)?,
        Loc::AtExpr(e) => {
            let a = eval(e, regs, snap, Some(cfa))?;
            snap.read_u64(a).ok_or(Fail::Outside)?
        }
        Loc::ValExpr(e) => eval(e, regs, snap, Some(cfa))?,
        Loc::Const(c) => *c,
    }))
}

/// Evaluates a CFI expression; `initial` is pushed first (the CFA, for
/// register rules).
fn eval(bytes: &[u8], regs: &Regs, snap: &Snapshot<'_>, initial: Option<u64>) -> Result<u64, Fail> {
    let encoding = Encoding {
        format: Format::Dwarf32,
        version: 4,
        address_size: 8,
    };
    let mut e = Evaluation::new(EndianSlice::new(bytes, LittleEndian), encoding);
    if let Some(v) = initial {
        e.set_initial_value(v);
    }
    let mut r = e.evaluate().map_err(|_| Fail::BadExpression)?;
    loop {
        r = match r {
            EvaluationResult::Complete => break,
            EvaluationResult::RequiresMemory {
                address, size: 8, ..
            } => {
                let v = snap.read_u64(address).ok_or(Fail::Outside)?;
                e.resume_with_memory(Value::Generic(v))
            }
            EvaluationResult::RequiresRegister { register, .. } => {
                let v = reg(regs, register.0)?;
                e.resume_with_register(Value::Generic(v))
            }
            _ => return Err(Fail::BadExpression),
        }
        .map_err(|_| Fail::BadExpression)?;
    }
    match e.result().first().map(|p| &p.location) {
        Some(Location::Address { address }) => Ok(*address),
        Some(Location::Value {
            value: Value::Generic(v),
        }) => Ok(*v),
        _ => Err(Fail::BadExpression),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(data: &[u8]) -> Snapshot<'_> {
        Snapshot {
            ip: 0x1000,
            sp: 0x7000,
            bp: 0,
            data,
        }
    }

    fn regs(sp: u64, bp: u64, ip: u64) -> Regs {
        let mut r = [None; NREGS];
        r[usize::from(RSP)] = Some(sp);
        r[usize::from(RBP)] = Some(bp);
        r[usize::from(RIP)] = Some(ip);
        r
    }

    #[test]
    fn frameless_leaf_reads_the_return_address_at_sp() {
        let mut data = vec![0u8; 16];
        data[..8].copy_from_slice(&0x4242u64.to_le_bytes());
        let rule = Rule {
            cfa: Cfa::RegOff(RSP, 8),
            ra: Loc::At(-8),
            regs: vec![],
            signal: false,
        };
        let out = rule
            .apply(&regs(0x7000, 0x9999, 0x1000), &snap(&data))
            .unwrap();
        assert_eq!(out[usize::from(RIP)], Some(0x4242));
        assert_eq!(out[usize::from(RSP)], Some(0x7008));
        assert_eq!(out[usize::from(RBP)], Some(0x9999), "rbp untouched");
        assert!(!rule.is_frame_pointer_frame());
    }

    #[test]
    fn a_load_past_the_snapshot_fails_and_undefined_ends() {
        let data = vec![0u8; 8];
        let rule = Rule {
            cfa: Cfa::RegOff(RSP, 16),
            ra: Loc::At(-8),
            regs: vec![],
            signal: false,
        };
        assert_eq!(
            rule.apply(&regs(0x7000, 0, 0), &snap(&data)),
            Err(Fail::Outside)
        );
        let outer = Rule {
            ra: Loc::Undefined,
            ..rule
        };
        assert_eq!(
            outer.apply(&regs(0x7000, 0, 0), &snap(&data)),
            Err(Fail::Outermost)
        );
    }

    #[test]
    fn plt_style_cfa_expression() {
        // DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and;
        // DW_OP_lit11; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
        let expr: Box<[u8]> =
            vec![0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22].into();
        let data = vec![0u8; 32];
        let s = snap(&data);
        // ip & 15 = 12 >= 11: CFA = rsp + 8 + 8
        assert_eq!(eval(&expr, &regs(0x7000, 0, 0x100c), &s, None), Ok(0x7010));
        // ip & 15 = 2 < 11: CFA = rsp + 8
        assert_eq!(eval(&expr, &regs(0x7000, 0, 0x1002), &s, None), Ok(0x7008));
    }
}
