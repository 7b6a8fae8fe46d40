package ipatlas

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// AppendSuccess writes what encoding/json writes for the envelope, for
// every Meta, including one with every field set (a field added to Meta
// shows up in encoding/json's bytes and fails this test until
// AppendSuccess writes it too).
func TestAppendSuccessMatchesEncodingJSON(t *testing.T) {
	lat, lon := 52.52, 13.405
	recs := []Record{
		{IP: "1.2.3.4"},
		{IP: "2a01:4f8::1", Continent: "Europe", ContinentCode: "EU", Country: "Germany", CountryCode: "DE", City: "Berlin <Mitte> & \"Süd\"\n",
			ISP: "Hetzner", ASN: "AS24940", Latitude: &lat, Longitude: &lon, TimeZone: "Europe/Berlin", Currency: "EUR", ZipCode: "10117", AreaCode: "030",
			LocationSource: "geofeed:ex\"ample"},
		{IP: "8.8.8.8", Country: "中国", Province: "北京市", City: "\u2028\x01"},
	}
	var all Meta
	v := reflect.ValueOf(&all).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(-9_000_000_000)
		default:
			t.Fatalf("Meta.%s is a %s: teach AppendSuccess and this test about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	metas := []Meta{{}, {IsAPIRequest: true, CurrentCredits: 123456789}, all}
	for _, rec := range recs {
		for _, meta := range metas {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&Envelope{Success: true, Data: &rec, Meta: meta}); err != nil {
				t.Fatal(err)
			}
			var data bytes.Buffer
			enc = json.NewEncoder(&data)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&rec); err != nil {
				t.Fatal(err)
			}
			got := AppendSuccess([]byte("x"), bytes.TrimSuffix(data.Bytes(), []byte("\n")), meta)
			if string(got[1:]) != want.String() {
				t.Errorf("AppendSuccess:\n got %s\nwant %s", got[1:], want.Bytes())
			}
		}
	}
}
