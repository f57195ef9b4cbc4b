"""Independent decoder for what the boot-test guest dumps from tracefs.

The boot tests check the kernel side against this small decoder rather than
against the project's own reader (crates/tracedata), so that a bug shared by
the recorder and the reader cannot hide itself. It reads:

* event ``format`` files (id, field offsets and sizes),
* ``header_page`` (page layout),
* per-CPU ``trace_pipe_raw`` dumps (whole ring-buffer pages).

Ring-buffer page layout (include/linux/ring_buffer.h, kernel/trace/ring_buffer.c):
a page header (u64 timestamp, local_t commit whose bits 31/30 flag missed
events / a stored missed count), then events with a 32-bit header
(type_len:5, time_delta:27). type_len 1..28: data of type_len*4 bytes;
0: length in the next u32 (it counts itself); 29: padding; 30: time extend;
31: absolute time stamp.
"""

import re
import struct

MISSED_EVENTS = 1 << 31
MISSED_STORED = 1 << 30
TYPE_PADDING, TYPE_TIME_EXTEND, TYPE_TIME_STAMP = 29, 30, 31


class Field:
    def __init__(self, decl, offset, size, signed):
        self.decl = decl
        self.offset = offset
        self.size = size
        self.signed = signed
        m = re.match(r"(.*?)(\w+)\s*(\[[^\]]*\])?\s*$", decl)
        self.type = m.group(1).strip() if m else decl
        self.name = m.group(2) if m else decl
        self.array = m.group(3) if m else None

    @property
    def data_loc(self):
        return self.type.startswith("__data_loc") or self.type.startswith("__rel_loc")


class Format:
    """One event format file."""

    def __init__(self, text, system="", name=""):
        self.system = system
        self.name = name
        self.id = None
        self.fields = {}
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("name:"):
                self.name = line.split(":", 1)[1].strip()
            elif line.startswith("ID:"):
                self.id = int(line.split(":", 1)[1])
            elif line.startswith("field:"):
                m = re.match(
                    r"field:(.*?);\s*offset:(\d+);\s*size:(\d+);(?:\s*signed:(\d+);)?", line
                )
                if m:
                    f = Field(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4) == "1")
                    self.fields[f.name] = f
        if self.id is None:
            raise ValueError(f"format {system}/{name} has no ID")

    def value(self, data, name):
        """Integer value of a scalar field."""
        f = self.fields[name]
        raw = data[f.offset : f.offset + f.size]
        if len(raw) != f.size:
            raise ValueError(f"{self.name}: record too short for {name}")
        return int.from_bytes(raw, "little", signed=f.signed)

    def u64_array(self, data, name):
        """Elements of an unsigned long array field (__data_loc, fixed or trailing)."""
        f = self.fields[name]
        if f.data_loc:
            loc = int.from_bytes(data[f.offset : f.offset + 4], "little")
            off, length = loc & 0xFFFF, loc >> 16
            if f.type.startswith("__rel_loc"):
                off += f.offset + 4
            raw = data[off : off + length]
            if len(raw) != length:
                raise ValueError(f"{self.name}: __data_loc {name} points past the record")
        elif f.size == 0:
            raw = data[f.offset :]
        else:
            raw = data[f.offset : f.offset + f.size]
        raw = raw[: len(raw) // 8 * 8]
        return [v for (v,) in struct.iter_unpack("<Q", raw)]

    def string(self, data, name):
        f = self.fields[name]
        if f.data_loc:
            loc = int.from_bytes(data[f.offset : f.offset + 4], "little")
            raw = data[loc & 0xFFFF : (loc & 0xFFFF) + (loc >> 16)]
        elif f.size == 0:
            raw = data[f.offset :]
        else:
            raw = data[f.offset : f.offset + f.size]
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


class Event:
    """One decoded record; `pos` is its offset in the per-CPU raw dump."""

    __slots__ = ("cpu", "ts", "fmt", "data", "seq", "pos")

    def __init__(self, cpu, ts, fmt, data, seq, pos=0):
        self.cpu, self.ts, self.fmt, self.data, self.seq, self.pos = cpu, ts, fmt, data, seq, pos

    @property
    def name(self):
        return self.fmt.name if self.fmt else "?"

    @property
    def pid(self):
        return int.from_bytes(self.data[4:8], "little", signed=True)

    def __getitem__(self, field):
        return self.fmt.value(self.data, field)

    def __repr__(self):
        return f"<{self.name} cpu{self.cpu} ts={self.ts} pid={self.pid}>"


class CpuData:
    """Decoded pages of one CPU: events in order plus the page loss flags."""

    def __init__(self, cpu, page_size=4096):
        self.cpu = cpu
        self.page_size = page_size
        self.events = []
        self.pages = 0
        self.missed_pages = 0
        self.missed_count = 0
        self.unknown_ids = set()


def page_size_from_header(text):
    """Size of a ring-buffer page from header_page (offset + size of `data`)."""
    m = re.search(r"field:\s*char data;\s*offset:(\d+);\s*size:(\d+);", text)
    if not m:
        raise ValueError("header_page has no data field")
    return int(m.group(1)) + int(m.group(2)), int(m.group(1))


def decode_cpu(raw, cpu, formats_by_id, page_size, data_offset):
    out = CpuData(cpu, page_size)
    seq = 0
    for p in range(0, len(raw) - data_offset + 1, page_size):
        page = raw[p : p + page_size]
        if len(page) < data_offset:
            break
        out.pages += 1
        ts = struct.unpack_from("<Q", page, 0)[0]
        commit = struct.unpack_from("<Q", page, 8)[0]
        size = commit & ~(MISSED_EVENTS | MISSED_STORED) & 0xFFFFFFFF
        if commit & MISSED_EVENTS:
            out.missed_pages += 1
            if commit & MISSED_STORED and data_offset + size + 8 <= len(page):
                out.missed_count += struct.unpack_from("<Q", page, data_offset + size)[0]
        data = page[data_offset : data_offset + size]
        off = 0
        while off + 4 <= len(data):
            hdr = struct.unpack_from("<I", data, off)[0]
            tl, delta = hdr & 0x1F, hdr >> 5
            if tl == TYPE_PADDING:
                if delta == 0:
                    break
                off += 4 + struct.unpack_from("<I", data, off + 4)[0]
                ts += delta
                continue
            if tl == TYPE_TIME_EXTEND:
                ts += (struct.unpack_from("<I", data, off + 4)[0] << 27) | delta
                off += 8
                continue
            if tl == TYPE_TIME_STAMP:
                abs_ts = (struct.unpack_from("<I", data, off + 4)[0] << 27) | delta
                ts = (ts & ~((1 << 59) - 1)) | abs_ts
                off += 8
                continue
            if tl == 0:
                length = struct.unpack_from("<I", data, off + 4)[0] - 4
                start = off + 8
            else:
                length = tl * 4
                start = off + 4
            ts += delta
            rec = data[start : start + length]
            off = start + ((length + 3) & ~3)
            if len(rec) < 8:
                continue
            etype = struct.unpack_from("<H", rec, 0)[0]
            fmt = formats_by_id.get(etype)
            if fmt is None:
                out.unknown_ids.add(etype)
            out.events.append(Event(cpu, ts, fmt, rec, seq, p + data_offset + start))
            seq += 1
    return out


def parse_stats(text):
    """per_cpu/cpuN/stats -> dict of int values (entries, overrun, dropped events...)."""
    vals = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            try:
                vals[k.strip()] = int(v.split()[0])
            except (ValueError, IndexError):
                pass
    return vals


class Dump:
    """What the guest's `dump INSTANCE PREFIX` left: per-CPU events, stats, formats."""

    def __init__(self, files, prefix):
        self.formats = {}
        for fname, content in files.items():
            if fname.startswith("fmt.") and content:
                parts = fname.split(".")
                fmt = Format(content.decode(), parts[1], ".".join(parts[2:]))
                self.formats[fmt.id] = fmt
        if "header_page" not in files:
            raise ValueError("no header_page in the dump")
        page_size, data_offset = page_size_from_header(files["header_page"].decode())
        self.cpus = []
        self.stats = []
        cpu = 0
        while f"{prefix}.cpu{cpu}.raw" in files:
            self.cpus.append(
                decode_cpu(files[f"{prefix}.cpu{cpu}.raw"], cpu, self.formats, page_size, data_offset)
            )
            self.stats.append(parse_stats(files.get(f"{prefix}.cpu{cpu}.stats", b"").decode()))
            cpu += 1
        if not self.cpus:
            raise ValueError(f"no {prefix}.cpuN.raw files")

    def fmt(self, system, name):
        for f in self.formats.values():
            if f.system == system and f.name == name:
                return f
        return None

    def merged(self):
        """All events of all CPUs, by timestamp (stable within a CPU)."""
        evs = [e for c in self.cpus for e in c.events]
        evs.sort(key=lambda e: (e.ts, e.cpu, e.seq))
        return evs

    def lost(self):
        """Per CPU: (overrun + dropped events from stats, pages flagged as missing)."""
        return [
            (s.get("overrun", 0) + s.get("dropped events", 0), c.missed_pages)
            for s, c in zip(self.stats, self.cpus)
        ]


def cookie_pairs(cpu_data, cookie_fmt):
    """Per CPU, pair every user_unwind_cookie event with the event just before it.

    Returns (pairs, strays): pairs = [(event, cookie_event)], strays = cookie events
    with no preceding event of the same task on that CPU."""
    pairs, strays = [], []
    prev = None
    for e in cpu_data.events:
        if e.fmt is cookie_fmt:
            if prev is not None and prev.fmt is not cookie_fmt and prev.pid == e.pid:
                pairs.append((prev, e))
            else:
                strays.append(e)
        prev = e
    return pairs, strays


def attribute(cpu_data, cookie_fmt, page_fmt=None, stack_fmt=None):
    """Per CPU, the cookie entry every event belongs to (kernel-patch tracing/0005,
    "Stitching by cookie"):

    * a ``user_unwind_cookie`` belongs to the event just before it, of the same
      task (the trigger, and the option after an event whose page cookie is in
      another page); it takes precedence;
    * otherwise an event belongs to the last ``user_unwind_page_cookie`` of its
      task before it in the same ring-buffer page (the dump's page, as read);
      a zero cookie means none, and a page cookie of pid 0 with cookie 0 ends
      every task's page cookie in that page;
    * a ``user_unwind_stack`` with ``links`` set (kernel-patch tracing/0013) counts as
      such a page cookie of its task for the kernel entry whose stack has
      ``prev`` equal to its cookie: those events pair with a ``Link``, which
      resolve_links() turns into that stack;
    * the ``ftrace`` system's other records (``print`` from trace_marker,
      function entries) ask for no stack: no page cookie or link covers them.

    Returns (pairs, strays): pairs = [(event, cookie or page cookie event, or
    Link)] for the events with a non-zero cookie, strays = cookie events with no
    preceding event of the same task."""
    by_event, strays = {}, []
    cur, page, prev = {}, None, None
    links = stack_fmt is not None and "links" in stack_fmt.fields
    for e in cpu_data.events:
        pg = e.pos // cpu_data.page_size
        if pg != page:
            page, cur = pg, {}
        if e.fmt is cookie_fmt:
            if prev is not None and prev.fmt not in (cookie_fmt, page_fmt) and prev.pid == e.pid:
                by_event[id(prev)] = (prev, e)
            else:
                strays.append(e)
        elif page_fmt is not None and e.fmt is page_fmt:
            if e.pid == 0 and e["cookie"] == 0:
                cur = {}
            else:
                cur[e.pid] = e
        elif e.fmt is stack_fmt:
            if links and e["links"] and e["cookie"]:
                cur[e.pid] = Link(e.pid, e["cookie"])
        elif e.fmt is not None and e.fmt.system == "ftrace":
            pass  # print, function...: they ask for no stack, nothing covers them
        else:
            pc = cur.get(e.pid)
            if pc is not None and pc["cookie"] != 0:
                by_event[id(e)] = (e, pc)
        prev = e
    pairs = [p for p in by_event.values() if p[1]["cookie"] != 0]
    pairs.sort(key=lambda p: p[0].seq)
    return pairs, strays


class Link:
    """The cover of a linking stack entry: the events it covers belong to the
    stack of ``pid`` whose ``prev`` is ``cookie``."""

    __slots__ = ("pid", "link")

    def __init__(self, pid, link):
        self.pid, self.link = pid, link

    def __getitem__(self, field):
        # a non-zero placeholder until resolve_links()
        return self.link

    def __repr__(self):
        return f"<link pid={self.pid} after {self.link:#x}>"


def resolve_links(pairs, stack_events, stack_fmt):
    """Replaces each Link of pairs by the stack entry of its task whose prev is
    the link's cookie; drops the pairs whose stack is not in the trace."""
    if stack_fmt is None or "prev" not in stack_fmt.fields:
        return [p for p in pairs if not isinstance(p[1], Link)]
    by_prev = {}
    for s in stack_events:
        if s["prev"]:
            by_prev.setdefault((s.pid, s["prev"]), s)
    out = []
    for e, c in pairs:
        if isinstance(c, Link):
            c = by_prev.get((c.pid, c.link))
            if c is None:
                continue
        out.append((e, c))
    return out


# a line of the kernel's trace file (a flags column before the time) or of
# trace-cmd report (none): task-pid, CPU, time, event name, the rest
TEXT_EVENT = re.compile(r"^\s*.+-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?([\d.]+): ([^:]+?)(?::|$)(.*)$")
# a loss: "CPU:N [LOST M EVENTS]" in the trace file, "CPU:N [M EVENTS DROPPED]"
# or "CPU:N [EVENTS DROPPED]" in trace-cmd report
TEXT_LOST = re.compile(r"^CPU:(\d+) \[(?:LOST|(?:\d+ )?EVENTS DROPPED)")
TEXT_STACK = re.compile(r"^\s*cookie=(?:0x)?([0-9a-f]+) prev=(?:0x)?([0-9a-f]+) links=(\d)")
TEXT_COOKIE = re.compile(r"cookie=(?:0x)?([0-9a-f]+)")
# records of the ftrace system that ask for no stack: markers, stack records
TEXT_NO_STACK = {"tracing_mark_write", "print", "bprint", "bputs", "<stack trace>", "kernel_stack",
                 "<user stack trace>", "user_stack", "function"}


def text_ns(ts):
    """A text time stamp in ns (trace-cmd report -t prints 9 digits)."""
    sec, _, frac = ts.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


def text_attribute(text, times=None):
    """Per CPU, the cookie of every trace event of a ``trace`` file or a
    ``trace-cmd report``, by the rules for text of kernel-patch tracing/0013
    (Documentation/trace/user-unwind.rst): "the same page" is "the same CPU
    since its last LOST line". Returns {cpu: [(name, pid, cookie or None)]}
    in text order, the ``ftrace`` system's entries left out. A dict passed
    as times gets {cpu: [time in ns]} of the same events."""
    cur, out, last = {}, {}, {}
    links = {}  # (cpu, index) -> (pid, linking cookie), resolved by prev at the end
    prevs = {}
    times = {} if times is None else times
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = TEXT_LOST.match(line)
        if m:
            cur[int(m.group(1))] = {}
            last.pop(int(m.group(1)), None)
            continue
        m = TEXT_EVENT.match(line)
        if not m or line.startswith("#"):
            continue
        pid, cpu, ts, name, rest = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4).strip(), m.group(5)
        state = cur.setdefault(cpu, {})
        if name in ("<user stack unwind>", "user_unwind_stack", "user_unwind_stack_snapshot"):
            # the trace file prints the fields on the next line, trace-cmd on this one
            st = TEXT_STACK.match(rest) or (TEXT_STACK.match(lines[i + 1]) if i + 1 < len(lines) else None)
            if st:
                cookie, prev, linked = int(st.group(1), 16), int(st.group(2), 16), st.group(3) == "1"
                if prev:
                    prevs.setdefault((pid, prev), cookie)
                if linked and cookie:
                    state[pid] = ("link", cookie)
            last.pop(cpu, None)
        elif name == "user_unwind_page_cookie":
            c = int(TEXT_COOKIE.search(rest).group(1), 16)
            if pid == 0 and c == 0:
                state.clear()
            else:
                state[pid] = ("page", c)
            last.pop(cpu, None)
        elif name == "user_unwind_cookie":
            c = int(TEXT_COOKIE.search(rest).group(1), 16)
            before = last.pop(cpu, None)
            if before is not None and before[1] == pid:
                # rule 1: it takes precedence over a page cookie or a link
                events = out[cpu]
                events[before[0]] = (events[before[0]][0], pid, c)
                links.pop((cpu, before[0]), None)
        elif name.startswith("user_unwind_") or name in TEXT_NO_STACK:
            pass
        else:
            kind = state.get(pid)
            events = out.setdefault(cpu, [])
            if kind is None or kind[1] == 0:
                events.append((name, pid, None))
            elif kind[0] == "page":
                events.append((name, pid, kind[1]))
            else:
                events.append((name, pid, None))
                links[(cpu, len(events) - 1)] = (pid, kind[1])
            times.setdefault(cpu, []).append(text_ns(ts))
            last[cpu] = (len(out[cpu]) - 1, pid)
    for (cpu, idx), (pid, link) in links.items():
        out[cpu][idx] = (out[cpu][idx][0], pid, prevs.get((pid, link)))
    return out


class Symbols:
    """Function symbols of a static binary (from `nm -n` output)."""

    def __init__(self, nm_text):
        syms = []
        for line in nm_text.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TtWw":
                syms.append((int(parts[0], 16), parts[2]))
        syms.sort()
        self.syms = syms
        self.addrs = [a for a, _ in syms]
        self.by_name = {n: a for a, n in syms}

    def lookup(self, addr):
        import bisect

        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return None
        # past the last symbol of .text we cannot tell: treat > 1 MiB away as unknown
        if addr - self.syms[i][0] > (1 << 20):
            return None
        return self.syms[i][1]

    def frames(self, stack):
        """Symbolize a user stack: frame 0 is an IP, the others are return addresses."""
        return [self.lookup(a if i == 0 else a - 1) or hex(a) for i, a in enumerate(stack)]
