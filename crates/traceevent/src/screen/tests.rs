use super::*;
use crate::tep::tests::{event, format, info, tep_with};
use crate::{Tep, TepError};

fn verdict(print: &str) -> Result<(), TepError> {
    let mut tep = Tep::new(8, 4096).unwrap();
    tep.parse_event(format("ev", 42, print).as_bytes(), "test")
}

fn refused(print: &str, why: &str) {
    assert_eq!(
        verdict(print),
        Err(TepError(format!(
            "an event format of test (ev) is refused: {why}"
        ))),
        "{print}"
    );
}

/// A refused event still prints, as its fields: the library lives.
fn prints_raw(print: &str) {
    let tep = tep_with(&[format("hostile", 44, print)]);
    assert_eq!(info(&tep, &event(44, 1, 9)), "[FAILED TO PARSE] value=9");
    assert_eq!(info(&tep, &event(42, 1, 9)), "value=9");
}

#[test]
fn division_by_a_field_is_refused() {
    refused(
        r#""q=%u", REC->value / REC->common_pid"#,
        "'/' by 'REC - >', not a constant",
    );
    refused(
        r#""r=%u", REC->value % REC->common_pid"#,
        "'%' by 'REC - >', not a constant",
    );
    // The corruption that was found: REC->id mangled into R%C->id.
    refused(r#""id=%u", R%C->value"#, "'%' by 'C - >', not a constant");
    refused(
        r#""s=%s", __print_symbolic(REC->value / (REC->common_pid), { 0, "zero" })"#,
        "'/' by '( REC -', not a constant",
    );
    prints_raw(r#""q=%u", REC->value / REC->common_pid"#);
}

#[test]
fn division_by_constants_and_sizeof_is_accepted() {
    for ok in [
        r#""ms=%u", REC->value % 1000"#,
        r#""ms=%u", REC->value / 1000L"#,
        r#""n=%u", REC->value / sizeof(u64)"#,
        r#""n=%u", REC->value / sizeof(unsigned int)"#,
        r#""n=%u", REC->value / sizeof(REC->common_pid)"#,
        r#""h=%u", REC->value % 0x10"#,
        r#""%d%%", REC->value"#,
        r#""%d%% \"/%s\" %%", REC->value, "/ %""#,
        r#""%c %c", '%', '/'"#,
        r#""%d" " %%/", REC->value"#,
    ] {
        assert_eq!(verdict(ok), Ok(()), "{ok}");
    }
}

#[test]
fn division_by_zero_constants_and_unknown_fields_is_refused() {
    refused(r#""q=%u", REC->value / 0"#, "'/' by 0");
    refused(r#""q=%u", REC->value % 0x0UL"#, "'%' by 0");
    refused(
        r#""q=%u", REC->value / sizeof(REC->nothing)"#,
        "'/' by sizeof(REC->nothing), of no field of non-zero size",
    );
    refused(r#""q=%u", REC->value / 4[REC->value]"#, "'/' by '4 ['");
    refused(
        r#""q=%u", REC->value / 10e"#,
        "'/' by 10e, not an integer constant",
    );
}

#[test]
fn a_divisor_libtraceevent_folds_to_zero_is_refused() {
    // Found by the fuzzer (SIGFPE while parsing): libtraceevent reads
    // `a / 10 / 11` as `a / (10 / 11)`, folds it, and divides by 0.
    refused(
        r#""%u", REC->value / 10 / 11"#,
        "'/' by '10 / 11', which libtraceevent folds at '/'",
    );
    refused(
        r#""%u", REC->value / 10 % 11"#,
        "'/' by '10 % 11', which libtraceevent folds at '%'",
    );
    refused(
        r#""%u", REC->value % 3 * REC->value"#,
        "'%' by '3 * REC', which libtraceevent folds at '*'",
    );
    prints_raw(r#""%u", REC->value / 10 / 11"#);
    for ok in [
        r#""%u.%u", REC->value / 1000, REC->value % 1000"#,
        r#""%u", REC->value / 4 + REC->value * 2"#,
        r#""%u", (REC->value / 4) * 2"#,
        r#""%u", REC->value / sizeof(char *)"#,
    ] {
        assert_eq!(verdict(ok), Ok(()), "{ok}");
    }
}

#[test]
fn operands_without_an_operator_are_refused() {
    // Found by the fuzzer (SIGSEGV while parsing `R>EC-va / 10 n?~a...`).
    refused(
        r#""", REC->value / 10 n ? ~a : b"#,
        "no operator between '10' and 'n'",
    );
    refused(r#""", REC->value / 1 ? 2 : 4;"#, "a ';' outside braces");
    refused(
        r#""%u", REC->value 7"#,
        "no operator between 'value' and '7'",
    );
    refused(
        r#""%s", "a" REC->value"#,
        "no operator between '\"...\"' and 'REC'",
    );
    for ok in [
        r#""%lu", (unsigned long)REC->value"#,
        r#""%d", ({ int v; v = REC->value; v; })"#,
        r#""%s%s", "a" "b", REC->value ? "x" : "y""#,
    ] {
        assert_eq!(verdict(ok), Ok(()), "{ok}");
    }
}

#[test]
fn a_brace_list_outside_a_helper_call_is_refused() {
    // Kernels write brace lists only as the tables of __print_symbolic()
    // and __print_flags().
    refused(
        r#""%d", REC->value + { 1 }"#,
        "'{' where a kernel's print fmt has none",
    );
    assert_eq!(
        verdict(r#""%s", __print_symbolic(REC->value, { 0, "a" }, { 1, "b" })"#),
        Ok(())
    );
}

/// libtraceevent ends a string at a tab, as at its quote: the screen reads
/// the print fmt as it does, not as C would.
#[test]
fn a_tab_ends_a_string_as_libtraceevent_reads_it() {
    // Found by the fuzzer, three times (SIGFPE): to libtraceevent these
    // are an empty string, then `u / ", 1"`, which it folds to 0 / 0.
    refused("\"\t,u/\", 1\t", "an argument literal that is never closed");
    refused("\"\t,u/\", 1m", "an argument literal that is never closed");
    refused("\"\t,u/K", "'/' by 'K', not a constant");
    refused(
        "\"\t,u/\", { 1, \"A\" }, l6",
        "an argument literal that is never closed",
    );
    refused("\"\", \"\t/R\"", "an argument literal that is never closed");
    refused("\"\", \"x\t/ 0", "'/' by 0");
    // What follows a string that a tab ended is not a ',' (maple_tree's
    // `"%s\tNode: %p"`): libtraceevent gives up on the print fmt before
    // its arguments and prints the fields, so they need no screening.
    for gives_up in [
        "\"%s\tNode %p\", REC->fn, REC->node",
        "\"a\tb\", REC->value / REC->common_pid",
        "1 / 0",
        r#"REC->value / 0, "x=%d""#,
        "\"%d goes on, REC->value",
    ] {
        assert_eq!(verdict(gives_up), Ok(()), "{gives_up}");
        prints_raw(gives_up);
    }
    // A backslash keeps the quote after it in the string, even the second
    // one of `\\`: all of `"a\\", 1 / 0, "` is one string to it.
    assert_eq!(verdict(r#""a\\", 1 / 0, ""#), Ok(()));
    let tep = tep_with(&[format("one_string", 44, r#""a\\", 1 / 0, ""#)]);
    assert_eq!(info(&tep, &event(44, 1, 9)), r#"a\", 1 / 0, "#);
    refused(r#""a\\\"", 1 / 0"#, "'/' by 0");
    // Where C ends the string, it goes on to the end of the line: then
    // libtraceevent gives up.
    assert_eq!(verdict(r#""a\\", 1 / 0"#), Ok(()));
    prints_raw(r#""a\\", 1 / 0"#);
}

#[test]
fn bytes_that_are_no_c_operator_are_refused() {
    // Found by the fuzzer (SIGSEGV while parsing `R>E:l / 01 ? u : s`m`).
    refused(r#""", REC->value ? 1 : 2 ` 3"#, "'`' is no C operator");
    refused(r#""%d", REC->value @ 2"#, "'@' is no C operator");
    refused(r#""%d", $REC->value"#, "'$' is no C operator");
    refused(r#""%d", REC->value ? 1 : 2 # 3"#, "'#' is no C operator");
    // Inside literals they are text.
    assert_eq!(verdict(r#""`@$\%d", REC->value"#), Ok(()));
}

#[test]
fn unpaired_brackets_and_statement_syntax_outside_statements_are_refused() {
    // Found by the fuzzer (SIGSEGV while parsing `R>E / 01?u: n}}}}}ng`).
    refused(
        r#""%d", REC->value ? 1 : 2 } 3"#,
        "a '}' that closes nothing",
    );
    refused(
        r#""%d", (REC->value ? 1 : 2 ] 3)"#,
        "a ']' that closes nothing",
    );
    refused(r#""%d", (REC->value"#, "a '(' that is never closed");
    refused(
        r#""%d", REC->value ? 1 : 2 . 3"#,
        "a '.' outside a ({ ... })",
    );
    refused(
        r#""%d", REC->value ? 1 : 2 = 3"#,
        "an '=' that is no comparison outside a ({ ... })",
    );
    // Found by the fuzzer (SIGSEGV while parsing `... na:4===...`).
    refused(
        r#""%d", REC->value === 4"#,
        "an '=' that is no comparison outside a ({ ... })",
    );
    refused(r#""%d", REC->value : 4"#, "a ':' with no '?' before it");
    // Found by the fuzzer: the rest of the line in a string never closed.
    refused(
        r#""%d", REC->value, "x"#,
        "an argument literal that is never closed",
    );
    refused(
        r#""%d", (REC->value ? 1) : 4"#,
        "a ':' with no '?' before it",
    );
    // Found by the fuzzer: SIGSEGV on a member of something not REC in the
    // last operand of a '?:'.
    refused(r#""%d", 1 ? 2 : a->b"#, "a '->' on 'a', not on REC");
    refused(r#""%d", REC->a->b"#, "a '->' on 'a', not on REC");
    // Found by the fuzzer: SIGSEGV on a '->' on a number, with no member.
    refused(r#""",0?D:4->"#, "a '->' on '4', not on REC");
    refused(r#""%d", REC->"#, "a '->' with no member name after it");
    refused(r#""%d", ->a"#, "a '->' on ',', not on REC");
    for ok in [r#""%d", 1 ? 2 : REC->b"#, r#""%llu", (REC)->top_delta_ts"#] {
        assert_eq!(verdict(ok), Ok(()), "{ok}");
    }
    assert_eq!(verdict("\"%d goes on, REC->value"), Ok(()));
    for ok in [
        r#""%d", REC->value == 1 || REC->value != 2 || REC->value <= 3"#,
        r#""%d", REC->a ? (REC->b ? 1 : 2) : REC->c >= 3 ? 4 : 5"#,
        r#""%d", ({ int v; v = REC->value; v; })"#,
        r#""%d", ({ union u r; r.word = REC->value; r.word; })"#,
        r#""%s", __print_symbolic(REC->value, { 0, "a" }, { 1, "b" })"#,
    ] {
        assert_eq!(verdict(ok), Ok(()), "{ok}");
    }
}

#[test]
fn libtraceevent_gets_no_more_than_the_screened_lines() {
    // Found by the fuzzer: libtraceevent read the print fmt's arguments on
    // into the lines after it, where a '/ 11' made '/ 10' a division by 0.
    let text = format!(
        "{}\nfff))igor) / 11\n",
        format("ev", 42, r#""%u", REC->value / 10"#).trim_end()
    );
    assert_eq!(check(text.as_bytes()), Ok(()));
    assert!(text.ends_with("/ 11\n"));
    let through = through_print_fmt(text.as_bytes());
    assert!(through.ends_with(b"REC->value / 10\n"), "{through:?}");
    let tep = tep_with(&[text]);
    assert_eq!(info(&tep, &event(42, 1, 95)), "9");
    // A print fmt within another line is one to libtraceevent, not to the
    // line-based screen: such formats are refused whole.
    let hidden = format("ev", 42, r#""%u", 1"#)
        .replace("format:\n", "format: print fmt: \"%u\", REC->value / 0\n");
    assert_eq!(
        check(hidden.as_bytes()),
        Err(Refusal::Layout(
            "an unexpected line 'format: print fmt: \"%u\", REC->value / 0'".into()
        ))
    );
}

#[test]
fn deep_nesting_is_refused() {
    // 100,000 parentheses overflow libtraceevent's stack (SIGABRT).
    let deep = format!(
        r#""%d", {}REC->value{}"#,
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    refused(&deep, "nested deeper than 200 levels");
    prints_raw(&deep);
    let ok = format!(r#""%d", {}REC->value{}"#, "(".repeat(50), ")".repeat(50));
    assert_eq!(verdict(&ok), Ok(()));
}

#[test]
fn huge_print_counts_are_refused() {
    // SIGSEGV in libtraceevent 1.7.
    let arr = r#""%s", __print_array(__get_dynamic_array(value), 4294967295, 8)"#;
    refused(arr, "__print_array of 34359738360 bytes");
    prints_raw(arr);
    let hex = r#""%s", __print_hex(__get_dynamic_array(value), 2147483647)"#;
    refused(hex, "__print_hex of 2147483647 bytes");
    prints_raw(hex);
    refused(
        r#""%s", __print_hex_str(REC->value, 0x20000)"#,
        "__print_hex_str of 131072 bytes",
    );
    assert_eq!(
        verdict(r#""%s", __print_array(__get_dynamic_array(value), 4, 8)"#),
        Ok(())
    );
    assert_eq!(
        verdict(r#""%s", __print_hex(REC->value, REC->common_pid)"#),
        Ok(())
    );
}

#[test]
fn huge_widths_are_refused() {
    // libtraceevent spins padding this width.
    refused(
        r#""%1073741824d", REC->value"#,
        "a width or precision of 1073741824",
    );
    prints_raw(r#""%1073741824d", REC->value"#);
    refused(r#""x=%-8.99999s", "y""#, "a width or precision of 99999");
    refused(
        r#""%099999999999999999999d", REC->value"#,
        "a width or precision of 99999999999999999999",
    );
    for ok in [
        r#""%-16s %08lx %.*s %%1073741824d", "a", 1, 2, "b""#,
        r#""%4096d", 1"#,
    ] {
        assert_eq!(verdict(ok), Ok(()), "{ok}");
    }
}

#[test]
fn the_print_fmt_screened_is_the_one_libtraceevent_prints() {
    // A second format section after the print fmt (fuzz print_fmt_screen,
    // which spun in libtraceevent's padding): the first print fmt counts.
    let text = format!(
        "{}format:\n\tfield:unsigned int value;\toffset:8;\tsize:4;\tsigned:0;\n\nprint fmt: \"%d\", 1\n",
        format("ev", 42, r#""%1073741824d", REC->value"#)
    );
    assert_eq!(
        check(text.as_bytes()),
        Err(Refusal::PrintFmt(
            "a width or precision of 1073741824".into()
        ))
    );
}

#[test]
fn screens_work_on_parsed_formats() {
    let f = EventFormat::parse("test", &format("ev", 42, r#""%d", REC->value / 0"#)).unwrap();
    assert_eq!(check_format(&f), Some("'/' by 0".into()));
    assert_eq!(check(b"name: x\nID: 1\n\x01"), Err(Refusal::NotText));
    assert_eq!(
        without_print_fmt(b"name: a\nprint fmt: \"%d\", 1\n"),
        b"name: a\nprint fmt: refused\n"
    );
}

#[test]
fn fields_that_do_not_parse_or_lie_far_away_are_refused_whole() {
    // Found by the fuzzer: libtraceevent reads common_type at its declared
    // offset in every record (SIGSEGV).
    let far = format("ev", 42, r#""%d", REC->value"#).replace(
        "common_type;\toffset:0;",
        "common_type;\toffset:0333333333333333;",
    );
    assert_eq!(
        check(far.as_bytes()),
        Err(Refusal::Layout(
            "field common_type at 333333333333333 of 2 bytes lies beyond 65536 bytes".into()
        ))
    );
    let mut tep = Tep::new(8, 4096).unwrap();
    assert_eq!(
        tep.parse_event(far.as_bytes(), "test"),
        Err(TepError(
            "an event format of test (ev) is refused: field common_type at \
             333333333333333 of 2 bytes lies beyond 65536 bytes"
                .into()
        ))
    );
    let bad = format("ev", 42, r#""%d", REC->value"#).replace("offset:8;", "offset:x;");
    let Err(Refusal::Layout(why)) = check(bad.as_bytes()) else {
        panic!("accepted");
    };
    assert!(why.contains("bad offset"), "{why}");
}

#[test]
fn shapes_kernels_write_pass_the_grammar() {
    for ok in [
        r#""x=%lu", (unsigned long)REC->value"#,
        r#""p=%p", (void *)(long)REC->value"#,
        r#""b=%d", (int)(REC->value & 0x3) << 2"#,
        r#""s=%s", REC->value ? "yes" : "no""#,
        r#""s=%s", __print_symbolic(REC->value, { 0, "zero" }, { 1, "one" })"#,
        r#""f=%s", __print_flags(REC->value, "|", { 1, "A" }, { 2, "B" },)"#,
        r#""a=%c", "abcd"[REC->value & 3]"#,
        r#""n=%zu", sizeof(struct foo *) + sizeof REC->value"#,
        r#""v=%d", ({ int __v = REC->value; __v > 0 ? __v : -__v; })"#,
        r#""m=%d", !REC->value && ~REC->common_pid || -1 >= 2"#,
        r#""%s" "%d", "a" "b", (REC)->value"#,
    ] {
        assert_eq!(verdict(ok), Ok(()), "{ok}");
    }
}

#[test]
fn shapes_no_kernel_writes_are_refused_by_the_grammar() {
    refused(
        r#""x=%d", REC->value REC->common_pid"#,
        "'REC' where a kernel's print fmt has none",
    );
    refused(r#""x=%d", REC->value +"#, "a print fmt that ends too early");
    refused(
        r#""x=%d",, REC->value"#,
        "',' where a kernel's print fmt has none",
    );
    refused(
        r#""x=%d", (REC->value)(1)"#,
        "'(' where a kernel's print fmt has none",
    );
    refused(
        r#""x=%d", REC->value ? 1"#,
        "a print fmt that ends too early",
    );
    refused(r#""x=%d", f(1 2)"#, "no operator between '1' and '2'");
    refused(
        r#""x=%d", REC->value < > 1"#,
        "'>' where a kernel's print fmt has none",
    );
    prints_raw(r#""x=%d", REC->value REC->common_pid"#);
}
