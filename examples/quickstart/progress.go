package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// Terminal redraw: every redrawEvery of wall time, the last recentEvents
// events under the table.
const (
	redrawEvery  = 100 * time.Millisecond
	recentEvents = 6
)

// lineWidth is the longest line drawn on a terminal: a wrapped line would
// break the redraw. It is one less than $COLUMNS when the shell exports it,
// else 79 (the table fits 80 columns).
func lineWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n >= 40 {
		return n - 1
	}
	return 79
}

// progress shows what happens: on a terminal a table of instances redrawn
// in place, otherwise one line per event.
type progress struct {
	out     io.Writer
	tty     bool
	clock   fleet.Clock
	start   time.Time // cloud time the run started
	link    func(string) (requestID, providerID string)
	records func() []fleet.InstanceRecord
	header  func() string

	mu     sync.Mutex
	recent []string
	drawn  int // lines of the last frame
	stop   chan struct{}
	done   chan struct{}
}

// isTerminal reports whether w is a character device (a terminal), without
// any dependency: os.File.Stat's ModeCharDevice.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress shows events on out; link maps an instance id, request or
// provider id, to both (see meter.link).
func newProgress(out io.Writer, plain bool, clock fleet.Clock, link func(string) (string, string)) *progress {
	return &progress{out: out, tty: !plain && isTerminal(out), clock: clock, start: clock.Now(), link: link}
}

// idLegend explains how instances are named in events and in the bill.
const idLegend = "Instances are named by request id → provider id (? until the cloud has given one)."

// idText names an instance by both its ids, "63ae721efefd → 8707a01d…":
// the Manager's request id (in the resource's label) and the provider's id.
// Short ids are for narrow columns.
func idText(link func(string) (string, string), id string, shorten bool) string {
	if id == "" {
		return ""
	}
	req, prov := link(id)
	if shorten {
		prov = short(prov)
	}
	switch {
	case req == "":
		return prov
	case prov == "":
		return req + " → ?"
	}
	return req + " → " + prov
}

// event shows one Manager event (the Manager's OnEvent hook).
func (p *progress) event(e fleet.Event) {
	line := p.eventLine(e)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		fmt.Fprintln(p.out, line)
		return
	}
	p.recent = append(p.recent, line)
	if len(p.recent) > recentEvents {
		p.recent = p.recent[len(p.recent)-recentEvents:]
	}
}

// printf writes a note between events (above the table on a terminal).
func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.out, format, args...)
}

func (p *progress) eventLine(e fleet.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-21s", clockSince(e.Time.Sub(p.start)), e.Type)
	id := idText(p.link, e.InstanceID, p.tty) // the table is narrow; plain lines keep the whole id
	if e.InstanceID != "" && strings.Contains(e.Message, e.InstanceID) {
		id = "" // the message names it already (InstanceCreated: "request → id …")
	}
	for _, s := range []string{e.Fleet, e.Provider, id, e.Message} {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	if !e.At.IsZero() && (e.Type == fleet.EventReleaseDeferred || e.Type == fleet.EventTerminationRetry) {
		fmt.Fprintf(&b, " (at %s)", clockSince(e.At.Sub(p.start)))
	}
	if e.Err != "" {
		b.WriteString(": " + e.Err)
	}
	return b.String()
}

// run redraws the table until close; a no-op off a terminal.
func (p *progress) run(records func() []fleet.InstanceRecord, header func() string) {
	p.records, p.header = records, header
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	if !p.tty {
		close(p.done)
		return
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(redrawEvery)
		defer t.Stop()
		for {
			p.redraw()
			select {
			case <-t.C:
			case <-p.stop:
				p.redraw()
				return
			}
		}
	}()
}

// close stops redrawing, leaving the last frame on screen.
func (p *progress) close() {
	if p.stop == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.stop = nil
}

func (p *progress) redraw() {
	frame := p.frame()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	io.WriteString(p.out, frame)
	p.drawn = strings.Count(frame, "\n")
}

// clear erases the last frame: cursor up to its first line, erase below.
func (p *progress) clear() {
	if p.drawn > 0 {
		fmt.Fprintf(p.out, "\x1b[%dF\x1b[J", p.drawn)
		p.drawn = 0
	}
}

// frame renders the header, the instance table and the recent events.
func (p *progress) frame() string {
	now := p.clock.Now()
	var tb bytes.Buffer
	tw := tabwriter.NewWriter(&tb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\t\t\t\t\tRESERVED")
	fmt.Fprintln(tw, "FLEET\tPROVIDER\tTYPE\tSTATUS\tAGE\tUNTIL")
	for _, r := range p.records() {
		i := r.Instance
		age, until := "-", "-"
		if !i.Created.IsZero() {
			end := now
			if i.Status == fleet.StatusTerminated && len(i.History) > 0 {
				end = i.History[len(i.History)-1].Time
			}
			age = hms(end.Sub(i.Created))
		}
		if !i.ReservedUntil.IsZero() {
			until = clockSince(i.ReservedUntil.Sub(p.start))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", i.Fleet, i.Provider, i.Offer.InstanceType, i.Status, age, until)
	}
	tw.Flush()
	p.mu.Lock()
	recent := append([]string(nil), p.recent...)
	p.mu.Unlock()
	width := lineWidth()
	var b strings.Builder
	for _, l := range append(append([]string{p.header(), ""}, strings.Split(strings.TrimRight(tb.String(), "\n"), "\n")...), "") {
		b.WriteString(cut(strings.TrimRight(l, " "), width) + "\n")
	}
	for _, l := range recent {
		b.WriteString(cut("  "+l, width) + "\n")
	}
	return b.String()
}

// cut shortens s to width characters.
func cut(s string, width int) string {
	if r := []rune(s); len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}

// clockSince formats a cloud duration since the start as +h:mm:ss.
func clockSince(d time.Duration) string {
	if d < 0 {
		return "-" + hms(-d)
	}
	return "+" + hms(d)
}

// hms formats a duration as h:mm:ss.
func hms(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}
