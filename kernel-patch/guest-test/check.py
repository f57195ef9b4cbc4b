#!/usr/bin/env python3
"""Check the serial log of a guest-test boot.

usage: check.py SERIAL_LOG [BUILD_DIR]

Every cookie of fp-prog must come back in a user_unwind_stack entry whose
first frames resolve, by address against fp-prog's symbol table, to
level3, level2, level1, main; the raw per-CPU pages must decode with the
system's libtraceevent; trace-cmd report must print the entries.
"""
import base64, re, subprocess, sys, os

log = open(sys.argv[1], errors='replace').read().replace('\r', '')
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[2] if len(sys.argv) > 2 else HERE
prog = os.path.join(OUT, 'fp-prog')
syms = []
for line in subprocess.run(['nm', '-n', prog], capture_output=True, text=True).stdout.splitlines():
    p = line.split()
    if len(p) == 3 and p[1] in 'tTwW':
        syms.append((int(p[0], 16), p[2]))

def sym(addr):
    best = None
    for a, n in syms:
        if a <= addr:
            best = n
        else:
            break
    return best

def section(name):
    m = re.search(r'=== %s-BEGIN\n(.*?)=== %s-END' % (name, name), log, re.S)
    return m.group(1) if m else ''

fails = 0
def check(cond, msg):
    global fails
    print(('PASS ' if cond else 'FAIL ') + msg)
    if not cond:
        fails += 1

def parse_trace(text):
    """Return (cookie events [(pid, cookie)], stacks {(pid, cookie): [frames]}, prog pid)."""
    cookies, stacks = [], {}
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        l = lines[i]
        m = re.match(r'\s*(\S.*?)-(\d+)\s+\[\d+\].*?: user_unwind_cookie: cookie=([0-9a-f]+)$', l)
        if m:
            cookies.append((m.group(1), int(m.group(2)), m.group(3)))
        m = re.match(r'\s*(\S.*?)-(\d+)\s+\[\d+\].*?: <user stack unwind>$', l)
        if m:
            pid = int(m.group(2))
            c = re.match(r'cookie=([0-9a-f]+)$', lines[i + 1]).group(1)
            frames = []
            j = i + 2
            while j < len(lines) and lines[j].startswith(' => '):
                frames.append(int(re.search(r'<([0-9a-f]+)>', lines[j]).group(1), 16))
                j += 1
            stacks[(pid, c)] = frames
            i = j
            continue
        i += 1
    return cookies, stacks

def check_stitch(name, text, want_min):
    cookies, stacks = parse_trace(text)
    progc = [c for c in cookies if c[0] == 'fp-prog']
    check(len(progc) >= want_min, f'{name}: {len(progc)} cookie events from fp-prog (>= {want_min})')
    for comm, pid, c in progc:
        fr = stacks.get((pid, c))
        check(fr is not None, f'{name}: cookie {c} pid {pid} has a user_unwind_stack')
        if fr is None:
            continue
        names = [sym(a) for a in fr]
        check(names[:4] == ['level3', 'level2', 'level1', 'main'],
              f'{name}: cookie {c} frames {[hex(a) for a in fr[:5]]} -> {names[:6]}')
    # every stack has at least one cookie
    for (pid, c) in stacks:
        check(any(p == pid and k == c for _, p, k in cookies), f'{name}: stack {c} pid {pid} has a cookie event')
    return cookies, stacks

# boot-level checks
check(re.search(r'^ok \d+ rust_unwind$', log, re.M) is not None, 'KUnit suite rust_unwind ok')
check(re.search(r'^ok \d+ rust_trace_user_unwind$', log, re.M) is not None, 'KUnit suite rust_trace_user_unwind ok')
check(re.search(r'^not ok', log, re.M) is None, 'no failed KUnit test')
splats = re.findall(r'^.*(?:WARNING:|BUG:|Oops|circular locking|sleeping function|UBSAN|KFENCE).*$', log, re.M)
check(not splats, f'no kernel splat {splats[:3]}')
check('=== INIT-DONE' in log, 'the guest ran to the end')
check(re.search(r'available_tracers: .*\buser_unwind\b', log) is not None, 'user_unwind in available_tracers')
check('option clear: refused (good)' in log, 'the option cannot be cleared under the tracer')
check('after nop: option=0' in log, 'resetting the tracer restores the option')
m = re.search(r'tracer cookies=(\d+) stacks=(\d+)', log)
check(m is not None and int(m.group(1)) >= 1 and int(m.group(2)) >= 1, 'the tracer produces cookies and stacks')
m = re.search(r'switch events=(\d+) cookies=(\d+) kthread-cookies=(\d+)', log)
check(m is not None and int(m.group(1)) > 0 and m.group(3) == '0', 'kernel threads get no cookie')
check(len(re.findall(r'^rmdir uu\d ok', log, re.M)) == 3 and '=== STRESS-DONE' in log,
      'option toggling and instance removal with pending requests')
if '=== FTRACETEST' in log:
    check(re.search(r'^# of passed:\s+3$', log, re.M) is not None and
          re.search(r'^# of failed:\s+0$', log, re.M) is not None, 'ftracetest: 3 passed, 0 failed')

check_stitch('option', section('TRACE-OPTION'), 3)
check_stitch('trigger', section('TRACE-TRIGGER'), 2)
# the trigger run must only have cookies after getppid sys_enter events
t = section('TRACE-TRIGGER').split('\n')
ok = True
for i, l in enumerate(t):
    if 'user_unwind_cookie:' in l:
        ok &= i > 0 and 'sys_enter: NR 110' in t[i - 1]
check(ok, 'trigger: every cookie follows a sys_enter NR 110 event')

# raw pages through libtraceevent
fc = re.search(r'=== FORMAT-COOKIE\n(.*?)=== FORMAT-STACK\n(.*?)=== header_page', log, re.S)
if fc:
    open(os.path.join(OUT, 'fmt_cookie'), 'w').write(fc.group(1))
    open(os.path.join(OUT, 'fmt_stack'), 'w').write(fc.group(2))
    raw = section('RAW-OPTION')
    data = b''
    for part in re.split(r'^CPU \d+\n', raw, flags=re.M)[1:]:
        b64 = [l.strip() for l in part.split('\n')
               if re.fullmatch(r'[A-Za-z0-9+/]+=*', l.strip()) and l.strip() != 'Terminated']
        data += base64.b64decode(''.join(b64))
    open(os.path.join(OUT, 'raw.bin'), 'wb').write(data)
    out = subprocess.run([os.path.join(OUT, 'rawdump'), '4096', os.path.join(OUT, 'raw.bin'), os.path.join(OUT, 'fmt_cookie'), os.path.join(OUT, 'fmt_stack')],
                         capture_output=True, text=True).stdout
    print(out)
    check('PARSE-FAILED' not in out, 'libtraceevent 1.7.1 parses both format files')
    check('FAILED TO PARSE' not in out, 'libtraceevent prints the records without [FAILED TO PARSE]')
    ck = re.findall(r'user_unwind_cookie (\d+) cookie=([0-9a-f]+)', out)
    st = re.findall(r'user_unwind_stack (\d+) cookie=([0-9a-f]+) stack=([0-9 ]*)', out)
    check(len(ck) >= 3 and len(st) >= 1, f'raw: {len(ck)} cookie and {len(st)} stack records decoded')
    sd = {(p, c): [int(x) for x in s.split()] for p, c, s in st}
    progpids = set(re.findall(r'FP-PROG pid=(\d+)', log))
    for p, c in ck:
        if p not in progpids:
            continue
        fr = sd.get((p, c))
        if fr is None:
            check(False, f'raw: cookie {c} pid {p} has a stack record')
            continue
        names = [sym(a) for a in fr]
        check(names[:4] == ['level3', 'level2', 'level1', 'main'], f'raw: cookie {c} -> {names[:5]}')
rep = section('TRACE-CMD-REPORT')
if rep:
    check('FAILED TO PARSE' not in rep, 'trace-cmd report: no [FAILED TO PARSE]')
    rc = re.findall(r'fp-prog-(\d+).*user_unwind_cookie:\s+cookie=([0-9a-f]+)', rep)
    rs = {(p, c): [int(x) for x in st.split()] for p, c, st in
          re.findall(r'fp-prog-(\d+).*user_unwind_stack:\s+cookie=([0-9a-f]+) stack=([0-9 ]*)', rep)}
    check(len(rc) >= 2, f'trace-cmd report: {len(rc)} cookies from fp-prog (record -p user_unwind)')
    for p, c in rc:
        fr = rs.get((p, c))
        check(fr is not None and [sym(a) for a in fr][:4] == ['level3', 'level2', 'level1', 'main'],
              f'trace-cmd report: cookie {c} -> {[sym(a) for a in fr] if fr else None}')
print('FAILS', fails)
sys.exit(1 if fails else 0)
