package dataset

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/schollz/progressbar/v3"
)

// reporter tells a person what a fetch is doing (lines on Progress, plus a
// progress bar per download when Progress is a terminal) and tells the
// program (structured records on Logger).
type reporter struct {
	w    io.Writer
	term bool
	log  *slog.Logger
}

// info reports a step. pkg may be empty.
func (r *reporter) info(pkg, msg string, attrs ...any) {
	r.line(pkg, msg)
	r.log.Info(msg, append([]any{"package", pkg}, attrs...)...)
}

// warn reports something the operator should look at.
func (r *reporter) warn(pkg, msg string, attrs ...any) {
	r.line(pkg, "warning: "+msg)
	r.log.Warn(msg, append([]any{"package", pkg}, attrs...)...)
}

func (r *reporter) line(pkg, msg string) {
	if pkg != "" {
		fmt.Fprintf(r.w, "%s: %s\n", pkg, msg)
		return
	}
	fmt.Fprintln(r.w, msg)
}

// bar returns where download bytes are counted: a progress bar on a
// terminal, nothing otherwise (plain output gets one line before and one
// after, which is what a log wants).
func (r *reporter) bar(label string) func(total int64) io.Writer {
	if !r.term {
		return nil
	}
	return func(total int64) io.Writer {
		// total is -1 when the server sends no length: the bar becomes a
		// spinner.
		return progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(r.w),
			progressbar.OptionSetDescription(label),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionShowCount(),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(r.w) }),
		)
	}
}

// mib renders a byte count for people.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// rate renders a throughput for people.
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB/s", float64(n)/(1<<20)/d.Seconds())
}
