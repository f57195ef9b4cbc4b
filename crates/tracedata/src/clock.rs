//! The time base of a trace.dat file: the TRACECLOCK, DATE, OFFSET and
//! TSC2NSEC options.

use crate::dat::option;
use crate::reader::RawOption;

/// The selected clock in a `trace_clock` text (`"[local] global"` -> `local`).
pub fn selected_clock(t: &str) -> String {
    if let (Some(a), Some(b)) = (t.find('['), t.find(']')) {
        if a < b {
            return t[a + 1..b].to_string();
        }
    }
    t.split_whitespace().next().unwrap_or("").to_string()
}

/// Whether timestamps count nanoseconds, so that trace-cmd prints them as
/// seconds with microseconds: yes, unless the first TRACECLOCK option selects
/// a clock that does not (e.g. `counter`, `x86-tsc`) and no TSC2NSEC option
/// converts it.
pub(crate) fn counts_nanoseconds(options: &[RawOption]) -> bool {
    if options.iter().any(|o| o.id == option::TSC2NSEC) {
        return true;
    }
    let Some(o) = options.iter().find(|o| o.id == option::TRACECLOCK) else {
        return true;
    };
    let text = String::from_utf8_lossy(&o.data);
    let Some(word) = text.split(' ').find(|w| w.starts_with('[')) else {
        return true;
    };
    let clock = word
        .split(['[', ']'])
        .find(|p| !p.is_empty())
        .unwrap_or("")
        .split_whitespace()
        .next()
        .unwrap_or("");
    matches!(
        clock,
        "local" | "global" | "uptime" | "perf" | "tsc2nsec" | "tai"
    ) || clock.starts_with("mono")
}

/// The shift of every timestamp given by the DATE (microseconds; left out
/// unless `with_date`, as `trace-cmd report --nodate` does) and OFFSET
/// (nanoseconds) options, summed in file order with wrapping arithmetic as
/// trace-cmd does. A value that is not a number counts as 0.
pub(crate) fn ts_offset(options: &[RawOption], with_date: bool) -> i64 {
    let mut off = 0i64;
    for o in options {
        if !(o.id == option::DATE && with_date) && o.id != option::OFFSET {
            continue;
        }
        let text = String::from_utf8_lossy(&o.data);
        let v = parse_signed(text.trim_end_matches('\0').trim());
        off = off.wrapping_add(if o.id == option::DATE {
            v.wrapping_mul(1000)
        } else {
            v
        });
    }
    off
}

/// `[+-]DECIMAL` or `[+-]0xHEX`; anything else is 0.
fn parse_signed(t: &str) -> i64 {
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).unwrap_or(0)
    } else {
        t.parse().unwrap_or(0)
    };
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(id: u16, text: &str) -> RawOption {
        RawOption {
            id,
            data: format!("{text}\0").into_bytes(),
        }
    }

    #[test]
    fn selected_clock_is_the_bracketed_one() {
        assert_eq!(selected_clock("local [global] counter"), "global");
        assert_eq!(selected_clock("mono"), "mono");
        assert_eq!(selected_clock(""), "");
    }

    #[test]
    fn nanosecond_clocks() {
        let tc = |t: &str| vec![opt(option::TRACECLOCK, t)];
        assert!(counts_nanoseconds(&[]));
        assert!(counts_nanoseconds(&tc("[local] global counter")));
        assert!(counts_nanoseconds(&tc("local [mono_raw] counter")));
        assert!(!counts_nanoseconds(&tc("local global [counter]")));
        assert!(!counts_nanoseconds(&tc("local [x86-tsc]")));
        let mut conv = tc("local [x86-tsc]");
        conv.push(opt(option::TSC2NSEC, ""));
        assert!(counts_nanoseconds(&conv));
    }

    #[test]
    fn date_and_offset_add_up() {
        let o = [
            opt(option::DATE, "0x10"),
            opt(option::OFFSET, "-5"),
            opt(option::OFFSET, "+7"),
            opt(option::OFFSET, "junk"),
        ];
        assert_eq!(ts_offset(&o, true), 16_000 - 5 + 7);
        assert_eq!(ts_offset(&o, false), -5 + 7);
        let min = [opt(option::OFFSET, "-9223372036854775808")];
        assert_eq!(ts_offset(&min, true), 0);
        let max = [opt(option::DATE, "9223372036854775807")];
        assert_eq!(ts_offset(&max, true), -1000);
    }
}
