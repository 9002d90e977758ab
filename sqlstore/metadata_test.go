package sqlstore

import (
	"encoding/json"
	"testing"
)

// FuzzMetadataJSON holds metadataJSON to json.Marshal's bytes, "{}" for
// no metadata.
func FuzzMetadataJSON(f *testing.F) {
	f.Add("team", "t1", "_user", "<b>&\u2028\xff", uint8(9))
	f.Add("", "", "a", "b", uint8(1))
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, n uint8) {
		m := map[string]string{}
		for i := range int(n % 12) { // past the keys metadataJSON sorts on its stack
			m[k1+string(rune('a'+i))] = v1
		}
		m[k2] = v2
		if n%5 == 0 {
			m = nil
		}
		want, _ := json.Marshal(m)
		if len(m) == 0 {
			want = []byte("{}")
		}
		if got := metadataJSON(m); got != string(want) {
			t.Fatalf("metadataJSON(%q) = %s, want %s", m, got, want)
		}
	})
}
