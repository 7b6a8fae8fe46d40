package server

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// dataKeys returns the keys of the "data" object of a query answer, or of
// every item's "data" in a batch answer.
func dataKeys(t *testing.T, body []byte, batch bool) [][]string {
	t.Helper()
	var single struct {
		Data map[string]json.RawMessage `json:"data"`
	}
	var many struct {
		Data []struct {
			Data map[string]json.RawMessage `json:"data"`
		} `json:"data"`
	}
	var objs []map[string]json.RawMessage
	if batch {
		if err := json.Unmarshal(body, &many); err != nil {
			t.Fatal(err)
		}
		for _, it := range many.Data {
			objs = append(objs, it.Data)
		}
	} else {
		if err := json.Unmarshal(body, &single); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, single.Data)
	}
	var out [][]string
	for _, o := range objs {
		var ks []string
		for k := range o {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		out = append(out, ks)
	}
	return out
}

func sorted(s ...string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestQueryFields: a query naming fields gets exactly those (and "ip"),
// with the values of the full record, in both languages; it is charged
// like any query, unless nothing looked up is in it (only "ip", or fields
// the data leaves empty).
func TestQueryFields(t *testing.T) {
	e := newEnv(t)
	const credits = 100
	acct, k := e.customer(t, account.Pro, 0, credits)
	n := int64(0)
	for _, tc := range []struct {
		name   string
		place  geotest.Known
		fields []string
		keys   []string // the data's keys
		free   bool     // nothing looked up is in the answer
	}{
		{"city and country", geotest.Beijing, []string{"city", "country"}, sorted("ip", "city", "country"), false},
		{"ip only", geotest.Nuremberg, []string{"ip"}, []string{"ip"}, true},
		{"empty district still sent", geotest.MountainView, []string{"district", "zip_code"}, sorted("ip", "district", "zip_code"), false},
		{"coordinates", geotest.Nuremberg, []string{"latitude", "longitude", "time_zone"}, sorted("ip", "latitude", "longitude", "time_zone"), false},
		// Unknown coordinates stay absent, as in a full record.
		{"no location", geotest.Singapore, []string{"latitude", "country"}, sorted("ip", "country"), false},
		{"duplicates", geotest.GoogleV6, []string{"asn", "asn", "isp"}, sorted("ip", "asn", "isp"), false},
		// Every default field but privacy, which is absent (unknown)
		// without privacy lists.
		{"empty list is all", geotest.Shenzhen, []string{}, sorted(slices.DeleteFunc(ipatlas.FieldSet(0).Names(), func(f string) bool { return f == "privacy" })...), false},
	} {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			t.Run(tc.name+"/"+lang.String(), func(t *testing.T) {
				fields, _ := json.Marshal(tc.fields)
				r := e.query(t, k.Secret, `{"ip":"`+tc.place.IP+`","lang":"`+lang.String()+`","fields":`+string(fields)+`}`)
				if r.Code != http.StatusOK {
					t.Fatalf("status %d: %s", r.Code, r.Body)
				}
				if !tc.free {
					n++
				}
				if got := dataKeys(t, r.Body.Bytes(), false)[0]; !slices.Equal(got, tc.keys) {
					t.Errorf("data keys %v, want %v", got, tc.keys)
				}
				set, _ := ipatlas.ParseFields(tc.fields)
				env := r.env()
				if want := set.Apply(tc.place.Want(lang)); !reflect.DeepEqual(*env.Data, want) {
					t.Errorf("data\n got %+v\nwant %+v", *env.Data, want)
				}
				if env.Meta.CurrentCredits != credits-n {
					t.Errorf("meta %+v after %d queries", env.Meta, n)
				}
				checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-n)
			})
		}
	}
	checkLedger(t, e, acct.ID, credits, n)
}

// TestQueryUnknownField: an unknown field name is InvalidRequest naming
// it, in the request's language, before the key and the address are
// checked, and costs nothing.
func TestQueryUnknownField(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Pro, 0, 10)
	known := strings.Join(ipatlas.RecordFields(), ", ")
	for _, tc := range []struct {
		name, body string
		code       ipatlas.ErrorCode
		text       string
		key        string
	}{
		{"en", `{"ip":"8.8.8.8","fields":["city","City"]}`, ipatlas.CodeInvalidRequest,
			`Invalid request: unknown field "City" in "fields"; the record's fields are ` + known, k.Secret},
		{"zh", `{"ip":"8.8.8.8","lang":"zh","fields":["town"]}`, ipatlas.CodeInvalidRequest,
			`无效的请求："fields" 中有未知字段 "town"；可用字段：` + known, k.Secret},
		{"empty name", `{"ip":"8.8.8.8","fields":[""]}`, ipatlas.CodeInvalidRequest,
			`Invalid request: unknown field "" in "fields"; the record's fields are ` + known, k.Secret},
		{"long name cut", `{"ip":"8.8.8.8","fields":["` + strings.Repeat("y", 200) + `"]}`, ipatlas.CodeInvalidRequest,
			`Invalid request: unknown field "` + strings.Repeat("y", 32) + `..." in "fields"; the record's fields are ` + known, k.Secret},
		{"before the address", `{"ip":"10.0.0.1","fields":["x"]}`, ipatlas.CodeInvalidRequest,
			`Invalid request: unknown field "x" in "fields"; the record's fields are ` + known, k.Secret},
		{"before the key", `{"ip":"8.8.8.8","fields":["x"]}`, ipatlas.CodeInvalidRequest,
			`Invalid request: unknown field "x" in "fields"; the record's fields are ` + known, ""},
		{"not a list", `{"ip":"8.8.8.8","fields":"city"}`, ipatlas.CodeInvalidRequest,
			`Invalid request: field "fields" must be an array, not string`, k.Secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.query(t, tc.key, tc.body)
			meta := ipatlas.Meta{IsAPIRequest: true}
			if tc.key != "" {
				meta = ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 10}
			}
			checkFailure(t, r, tc.code, tc.text, meta)
		})
	}
	checkLedger(t, e, acct.ID, 10, 0)
}

// TestBatchFields: a batch naming fields restricts every successful item
// to them; failed items are unchanged.
func TestBatchFields(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Pro, 0, 100)
	ips := []string{geotest.Beijing.IP, "127.0.0.1", geotest.GoogleV6.IP, geotest.Singapore.IP}
	places := []*geotest.Known{&geotest.Beijing, nil, &geotest.GoogleV6, &geotest.Singapore}
	fields := []string{"country", "city", "longitude"}
	set, _ := ipatlas.ParseFields(fields)
	for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		r := e.batch(t, k.Secret, batchBody(ips, lang.String(), fields))
		env := r.batchEnv(t)
		keys := dataKeys(t, r.Body.Bytes(), true)
		for i, p := range places {
			it := env.Data[i]
			if p == nil {
				if it.Success || it.Code != ipatlas.CodePrivateIP || keys[i] != nil {
					t.Errorf("%v item %d: %+v", lang, i, it)
				}
				continue
			}
			want := sorted("ip", "country", "city", "longitude")
			if !p.HasLocation {
				want = sorted("ip", "country", "city")
			}
			if !slices.Equal(keys[i], want) {
				t.Errorf("%v item %d: keys %v, want %v", lang, i, keys[i], want)
			}
			if w := set.Apply(p.Want(lang)); !reflect.DeepEqual(*it.Data, w) {
				t.Errorf("%v item %d:\n got %+v\nwant %+v", lang, i, *it.Data, w)
			}
		}
		if env.Meta.Charged != 3 {
			t.Errorf("charged %d", env.Meta.Charged)
		}
	}
	checkLedger(t, e, acct.ID, 100, 6)
}

// TestQueryFieldsBodyLimit: a "fields" list naming every field twice fits
// the single query's body limit with room to spare; so does a batch of
// 100 of the longest address texts with every field named.
func TestQueryFieldsBodyLimit(t *testing.T) {
	all := append(ipatlas.RecordFields(), ipatlas.RecordFields()...)
	b, _ := json.Marshal(map[string]any{"ip": "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", "lang": "zh-Hans-CN", "fields": all})
	if len(b) > maxBodyBytes/4 {
		t.Errorf("a query naming every field twice is %d bytes", len(b))
	}
	ips := make([]string, ipatlas.MaxBatchSize)
	for i := range ips {
		ips[i] = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255." + strconv.Itoa(100+i%100)
	}
	b, _ = json.MarshalIndent(map[string]any{"ips": ips, "lang": "zh-Hans-CN", "fields": all}, "", "    ")
	if len(b) > maxBatchBodyBytes/2 {
		t.Errorf("the largest sensible batch, indented, is %d bytes; the limit %d leaves too little room", len(b), maxBatchBodyBytes)
	}
	// And the server takes it (these are private addresses: 200 with
	// every item failed, nothing charged).
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 1)
	env := e.batch(t, k.Secret, string(b)).batchEnv(t)
	if len(env.Data) != 100 || env.Meta.Charged != 0 {
		t.Errorf("%d items, charged %d", len(env.Data), env.Meta.Charged)
	}
	if u, _ := e.svc.Usage(context.Background(), k.ID); u.Used != 0 {
		t.Errorf("used %d", u.Used)
	}
}

// BenchmarkQueryFields is BenchmarkQuery with a "fields" list in every
// body: the cost of decoding the list and writing a partial record.
func BenchmarkQueryFields(b *testing.B) {
	e, k := benchEnv(b)
	var bodies [][]byte
	for _, p := range geotest.Places {
		bodies = append(bodies, []byte(`{"ip":"`+p.IP+`","fields":["country","city","latitude","longitude"]}`))
	}
	benchParallelQueries(b, e, k.Secret, bodies)
}
