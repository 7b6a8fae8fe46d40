package score

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
)

// Write prints the report as a table for people: one row per group, each
// breakdown under its heading. The radius columns appear when some answer
// states a radius.
func (r Report) Write(w io.Writer) error {
	radius := r.Overall.WithRadius > 0
	head := []string{"", "truths", "answered", "right country", "median km", "p90 km", "≤10 km", "≤40 km", "≤100 km"}
	if radius {
		head = append(head, "in radius", "mean radius km")
	}
	rows := [][]string{head}
	row := func(name string, f Figures) {
		cells := []string{name, count(f.Truths), share(f.Answered, f.Truths), pct(f.RightCountry),
			km(f.MedianKm), km(f.P90Km), pct(f.Within10), pct(f.Within40), pct(f.Within100)}
		if radius {
			in := "-"
			if f.InsideRadius != nil {
				in = pct(*f.InsideRadius)
			}
			cells = append(cells, in, km(f.MeanRadiusKm))
		}
		rows = append(rows, cells)
	}
	section := func(title string, gs []Group, label func(string) string) {
		if len(gs) == 0 {
			return
		}
		rows = append(rows, []string{title})
		for _, g := range gs {
			row("  "+label(g.Name), g.Figures)
		}
	}
	plain := func(s string) string { return s }
	row("all", r.Overall)
	section("by continent (of the truth)", r.Continents, func(code string) string {
		if n := names.Continent(code, ipatlas.English); n != "" {
			return code + " " + n
		}
		return code
	})
	section("by network (the answer's hosting flag)", r.Networks, plain)
	section("by kind (the truth file's column)", r.Kinds, plain)
	section("by confidence (the answer's)", r.Confidence, plain)
	if err := writeTable(w, rows); err != nil {
		return err
	}
	f := r.Overall
	if f.MeanRadiusKm != nil && f.ConstantRadiusKm != nil && *f.ConstantRadiusKm > 0 {
		_, err := fmt.Fprintf(w, "\nthe stated radii hold %s of the truths with a mean of %.0f km; one radius for every answer would need %.0f km to hold as many (%.2fx)\n",
			pct(*f.InsideRadius), *f.MeanRadiusKm, *f.ConstantRadiusKm, *f.MeanRadiusKm / *f.ConstantRadiusKm)
		return err
	}
	return nil
}

// writeTable prints rows in columns two spaces apart: the first column
// aligned left, the figures right. A row of one cell is a heading, which
// sets no column's width.
func writeTable(w io.Writer, rows [][]string) error {
	var widths []int
	for _, r := range rows {
		if len(r) == 1 {
			continue
		}
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			pad := ""
			if len(r) > 1 {
				pad = strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			}
			switch {
			case i == 0:
				b.WriteString(c)
				if len(r) > 1 {
					b.WriteString(pad)
				}
			default:
				b.WriteString("  ")
				b.WriteString(pad)
				b.WriteString(c)
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

func share(n, of int) string {
	if of == 0 {
		return "-"
	}
	return pct(float64(n) / float64(of))
}

func km(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

// count writes 5500 as 5,500.
func count(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
