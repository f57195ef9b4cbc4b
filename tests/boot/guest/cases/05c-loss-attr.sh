# timeout: 240
# Page cookies keep attribution exact through losses: a tiny
# buffer and the flood program (N x: getpid, then a marker), in overwrite mode read
# after the run (whole pages overwritten), and in producer mode (overwrite off)
# read slowly while it runs (events dropped between pages, pages read while they
# are written). The host checks every attributed getpid event against the markers.
. /cases/lib.sh
flood_inst c5c

# overwrite mode: the oldest pages are overwritten, read once at the end
w 1 "$I/options/overwrite"
ustest flood 3000 "$I/trace_marker" >truth-o.txt
w 0 "$I/tracing_on"
cat "$I/trace" >trace-o.txt
dump "$I" c5o

# producer mode: writes fail while the buffer is full; a slow reader empties it
w 0 "$I/options/overwrite"
w 1 "$I/tracing_on"
ustest flood 3000 "$I/trace_marker" >truth-p.txt &
flood=$!
while kill -0 $flood 2>/dev/null; do
	i=0
	while [ $i -lt "$ncpus" ]; do
		rawdump "$I/per_cpu/cpu$i/trace_pipe_raw" >>"early.cpu$i.raw"
		i=$((i + 1))
	done
	usleep 30000
done
wait $flood
w 0 "$I/tracing_on"
dump "$I" c5p
i=0
while [ $i -lt "$ncpus" ]; do
	touch "early.cpu$i.raw"
	cat "early.cpu$i.raw" "c5p.cpu$i.raw" >"c5p.cpu$i.all" && mv "c5p.cpu$i.all" "c5p.cpu$i.raw"
	rm -f "early.cpu$i.raw"
	i=$((i + 1))
done
w 0 "$I/options/userstacktrace_delay"
w 1 "$I/options/overwrite"
rmdir "$I"
