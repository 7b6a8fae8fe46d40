package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/ipatlas/ipatlas"
)

func summarizeHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: ipatlas summarize [flags] IP...
       ipatlas summarize [flags] -          (addresses from standard input, one per line)
       ipatlas summarize [flags] --file FILE

Looks a list of addresses up as lookup does (the disk cache, then one
batch request per 100 addresses, each success metered as one query; a
progress bar on a terminal) and prints what they are: how many there are
by country, by AS, by route, and how many carry each privacy flag (and
each service the lists name), with the failures by code. Every address
counts as often as it appears in the input.

Privacy counts are of the addresses whose flags are known: "of N" says
how many that is (none when the service has no privacy data; tor has its
own N, since the service leaves it unknown when its exit list is stale).

Output: the --top largest groups of each kind, aligned, in decreasing
order; with --json, one JSON object with every group.

Flags:
`)
	clientFlagsHelp(w, fs)
	fmt.Fprint(w, "\n", clientSettingsHelp, "\n", clientExitHelp,
		"  The exit code is that of the first address that failed, if any; the summary is printed all the same.\n")
}

// summary is summarize's answer. Its JSON form is the --json output.
type summary struct {
	Addresses int            `json:"addresses"`
	Answered  int            `json:"answered"`
	Failed    int            `json:"failed"`
	Failures  []codeCount    `json:"failures"`
	Countries []countryCount `json:"countries"`
	ASNs      []asnCount     `json:"asns"`
	Routes    []routeCount   `json:"routes"`
	Privacy   privacyCount   `json:"privacy"`
}

type codeCount struct {
	Code  ipatlas.ErrorCode `json:"code"` // "" for a transport failure
	Count int               `json:"count"`
}

// countryCount is one country; the code and name are "" for the answered
// addresses the data places in no country.
type countryCount struct {
	CountryCode string `json:"country_code"`
	Country     string `json:"country"`
	Count       int    `json:"count"`
}

type asnCount struct {
	ASN   string `json:"asn"` // "" for addresses in no AS
	Name  string `json:"name"`
	Count int    `json:"count"`
}

type routeCount struct {
	Route string `json:"route"` // "" for addresses without a route
	ASN   string `json:"asn"`
	Count int    `json:"count"`
}

// privacyCount counts the flags among the answered addresses whose flags
// are known (Known; TorKnown for tor).
type privacyCount struct {
	Known    int            `json:"known"`
	Hosting  int            `json:"hosting"`
	VPN      int            `json:"vpn"`
	Relay    int            `json:"relay"`
	TorKnown int            `json:"tor_known"`
	Tor      int            `json:"tor"`
	Services []serviceCount `json:"services"`
}

type serviceCount struct {
	Service string `json:"service"`
	Count   int    `json:"count"`
}

// tally builds a summary as outcomes arrive.
type tally struct {
	s         summary
	failures  map[ipatlas.ErrorCode]int
	countries map[string]*countryCount
	asns      map[string]*asnCount
	routes    map[string]*routeCount
	services  map[string]int
}

func newTally() *tally {
	return &tally{failures: map[ipatlas.ErrorCode]int{}, countries: map[string]*countryCount{},
		asns: map[string]*asnCount{}, routes: map[string]*routeCount{}, services: map[string]int{}}
}

func (t *tally) add(o *lookupOutcome) {
	t.s.Addresses++
	if o.err != nil {
		t.s.Failed++
		t.failures[errorCode(o.err)]++
		return
	}
	t.s.Answered++
	r := &o.res.Record
	c := t.countries[r.CountryCode]
	if c == nil {
		c = &countryCount{CountryCode: r.CountryCode, Country: r.Country}
		t.countries[r.CountryCode] = c
	}
	c.Count++
	a := t.asns[r.ASN]
	if a == nil {
		a = &asnCount{ASN: r.ASN, Name: r.ISP}
		t.asns[r.ASN] = a
	}
	a.Count++
	route := ""
	if r.Route.IsValid() {
		route = r.Route.String()
	}
	rt := t.routes[route]
	if rt == nil {
		rt = &routeCount{Route: route, ASN: r.ASN}
		t.routes[route] = rt
	}
	rt.Count++
	if p := r.Privacy; p != nil {
		pc := &t.s.Privacy
		pc.Known++
		pc.Hosting += b2i(p.Hosting)
		pc.VPN += b2i(p.VPN)
		pc.Relay += b2i(p.Relay)
		if p.Tor != nil {
			pc.TorKnown++
			pc.Tor += b2i(*p.Tor)
		}
		if p.Service != "" {
			t.services[p.Service]++
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// done sorts every group by decreasing count, ties by name, so that the
// output is the same for the same input.
func (t *tally) done() summary {
	s := t.s
	s.Failures = []codeCount{}
	for code, n := range t.failures {
		s.Failures = append(s.Failures, codeCount{code, n})
	}
	slices.SortFunc(s.Failures, func(a, b codeCount) int { return cmp.Or(b.Count-a.Count, cmp.Compare(a.Code, b.Code)) })
	s.Countries = sortedCounts(t.countries, func(c *countryCount) (int, string) { return c.Count, c.CountryCode })
	s.ASNs = sortedCounts(t.asns, func(c *asnCount) (int, string) { return c.Count, c.ASN })
	s.Routes = sortedCounts(t.routes, func(c *routeCount) (int, string) { return c.Count, c.Route })
	s.Privacy.Services = []serviceCount{}
	for svc, n := range t.services {
		s.Privacy.Services = append(s.Privacy.Services, serviceCount{svc, n})
	}
	slices.SortFunc(s.Privacy.Services, func(a, b serviceCount) int { return cmp.Or(b.Count-a.Count, cmp.Compare(a.Service, b.Service)) })
	return s
}

func sortedCounts[T any](m map[string]*T, key func(*T) (int, string)) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b T) int {
		na, ka := key(&a)
		nb, kb := key(&b)
		return cmp.Or(nb-na, cmp.Compare(ka, kb))
	})
	return out
}

func runSummarize(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("summarize", flag.ContinueOnError)
	cf := addClientFlags(fs)
	langName := fs.String("lang", "en", "country names in `LANG`: en or zh")
	jsonOut := fs.Bool("json", false, "print one JSON object with every group")
	file := fs.String("file", "", "read addresses from `FILE`, one per line (- for standard input)")
	top := fs.Int("top", 10, "show the `N` largest groups of each kind (0: all)")
	noCache := fs.Bool("no-cache", false, "ask the service even when the answer is cached")
	ips, err := parseArgs(e, fs, args, func(w io.Writer) { summarizeHelp(w, fs) })
	if err != nil {
		return err
	}
	lang, ok := ipatlas.ParseLang(*langName)
	if !ok {
		return usageError(fmt.Sprintf("summarize: --lang %q: want en or zh", *langName))
	}
	if *top < 0 {
		return usageError(fmt.Sprintf("summarize: --top %d: want 0 or more", *top))
	}
	if ips, err = gatherAddresses(e, "summarize", ips, *file); err != nil {
		return err
	}
	c, cache, err := cf.lookupClient(e, "summarize", *noCache)
	if err != nil {
		return err
	}

	t := newTally()
	var first error
	bar := newProgress(e, "looking up", len(ips), true)
	err = lookupAll(ctx, c, cache, ips, lang, ipatlas.FieldSet(0), bar, func(o *lookupOutcome) error {
		if o.err != nil && first == nil {
			first = o.err
		}
		t.add(o)
		return nil
	})
	if err != nil {
		return err
	}
	cache.prune()
	s := t.done()
	if *jsonOut {
		err = writeJSONLine(e.stdout, s)
	} else {
		err = printSummary(e.stdout, s, *top)
	}
	if err != nil {
		return err
	}
	if first != nil {
		return &exitError{code: clientExitCode(first), err: fmt.Errorf("summarize: %d of %s failed; the first: %w", s.Failed, plural(s.Addresses, "address", "addresses"), first)}
	}
	return nil
}

// printSummary shows s for a person: each kind of group under its title,
// at most top groups (0: all) and how many more there are.
func printSummary(w io.Writer, s summary, top int) error {
	pct := func(n, of int) string {
		if of == 0 {
			return ""
		}
		return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
	}
	var rows [][]string
	line := func(cells ...string) { rows = append(rows, cells) }
	line("addresses", strconv.Itoa(s.Addresses))
	line("answered", strconv.Itoa(s.Answered), pct(s.Answered, s.Addresses))
	line("failed", strconv.Itoa(s.Failed), pct(s.Failed, s.Addresses))
	for _, f := range s.Failures {
		code := string(f.Code)
		if code == "" {
			code = "(no answer)"
		}
		line("  "+code, strconv.Itoa(f.Count), pct(f.Count, s.Addresses))
	}
	section := func(title string, n int, cell func(i int) (string, int)) {
		line("")
		line(title)
		shown := n
		if top > 0 {
			shown = min(n, top)
		}
		for i := range shown {
			name, count := cell(i)
			line("  "+name, strconv.Itoa(count), pct(count, s.Answered))
		}
		if shown < n {
			line("  (" + strconv.Itoa(n-shown) + " more)")
		}
	}
	section("by country", len(s.Countries), func(i int) (string, int) {
		c := s.Countries[i]
		if c.CountryCode == "" {
			return "(unknown)", c.Count
		}
		return c.CountryCode + " " + c.Country, c.Count
	})
	section("by AS", len(s.ASNs), func(i int) (string, int) {
		a := s.ASNs[i]
		if a.ASN == "" {
			return "(none)", a.Count
		}
		return a.ASN + " " + a.Name, a.Count
	})
	section("by route", len(s.Routes), func(i int) (string, int) {
		r := s.Routes[i]
		if r.Route == "" {
			return "(none)", r.Count
		}
		return r.Route + " " + r.ASN, r.Count
	})
	p := s.Privacy
	line("")
	if p.Known == 0 {
		line("privacy", "unknown (the service has no privacy data)")
	} else {
		line("privacy", "of "+strconv.Itoa(p.Known))
		line("  hosting", strconv.Itoa(p.Hosting), pct(p.Hosting, p.Known))
		line("  vpn", strconv.Itoa(p.VPN), pct(p.VPN, p.Known))
		if p.TorKnown == 0 {
			line("  tor", "unknown")
		} else {
			line("  tor", strconv.Itoa(p.Tor), pct(p.Tor, p.TorKnown)+" of "+strconv.Itoa(p.TorKnown))
		}
		line("  relay", strconv.Itoa(p.Relay), pct(p.Relay, p.Known))
		shown := len(p.Services)
		if top > 0 {
			shown = min(shown, top)
		}
		for _, svc := range p.Services[:shown] {
			line("  service "+svc.Service, strconv.Itoa(svc.Count), pct(svc.Count, p.Known))
		}
		if shown < len(p.Services) {
			line("  (" + strconv.Itoa(len(p.Services)-shown) + " more services)")
		}
	}
	return writeAligned(w, rows)
}
