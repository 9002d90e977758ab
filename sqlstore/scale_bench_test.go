package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gateway "github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/admin"
	"github.com/modelgateway/gateway/memstore"
	"github.com/modelgateway/gateway/sqlstore"
)

// apiKeysViaAPI creates n API keys through POST /api-keys of a gateway
// over s, and returns the keys the answers gave.
func apiKeysViaAPI(tb testing.TB, s interface {
	gateway.KeyStore
	admin.KeyStore
}, n int) []string {
	tb.Helper()
	now := time.Now()
	if err := s.CreateAPIKey(context.Background(), &gateway.APIKey{ID: "key-org", Digest: gateway.HashAPIKey(cpOrgKey),
		Type: gateway.KeyOrganisation, Role: gateway.RoleAdmin, CreatedAt: now, UpdatedAt: now}); err != nil {
		tb.Fatal(err)
	}
	g := gateway.New(gateway.Options{Keys: s, LogSink: &gateway.LogBuffer{}})
	admin.Mount(g, admin.Options{Keys: s})
	defer g.Close()
	keys := make([]string, n)
	for i := range keys {
		req := httptest.NewRequest("POST", "/v1/api-keys/workspace/service",
			strings.NewReader(fmt.Sprintf(`{"name":"svc-%d","workspace_id":"ws-%d","scopes":["completions.write"]}`, i, i%10)))
		req.Header.Set(gateway.HeaderAPIKey, cpOrgKey)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		var created struct{ Key string }
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &created) != nil || created.Key == "" {
			tb.Fatalf("create key %d: %d %s", i, rec.Code, rec.Body)
		}
		keys[i] = created.Key
	}
	return keys
}

var authFixture struct {
	once      sync.Once
	sql       *sqlstore.Store
	mem       *memstore.Store
	sqlKeys   []string
	memKeys   []string
	createdIn time.Duration
}

// BenchmarkAuthenticate authenticates requests with one of 10,000 keys
// created through the control plane, on a SQLite Store and on a
// memstore.Store: the Store's cached lookup costs what memstore.Store's
// does. The creation rate through the API is reported once, in the log.
func BenchmarkAuthenticate(b *testing.B) {
	const n = 10000
	authFixture.once.Do(func() {
		s, err := sqlstore.Open(context.Background(), sqliteDSN(b), sqlstore.Options{MasterKey: testKey, RefreshInterval: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		authFixture.sqlKeys = apiKeysViaAPI(b, s, n)
		authFixture.createdIn = time.Since(start)
		authFixture.sql = s
		authFixture.mem = memstore.New()
		authFixture.memKeys = apiKeysViaAPI(b, authFixture.mem, n)
	})
	b.Logf("%d API keys created through POST /api-keys on SQLite in %v (%.0f/s)", n, authFixture.createdIn.Round(time.Millisecond),
		n/authFixture.createdIn.Seconds())
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, st := range []struct {
		name  string
		store gateway.KeyStore
		keys  []string
	}{{"sqlstore", authFixture.sql, authFixture.sqlKeys}, {"memorystore", authFixture.mem, authFixture.memKeys}} {
		b.Run(st.name, func(b *testing.B) {
			h := gateway.Authenticate(st.store)(ok)
			// Authenticate removes the key from the request it serves:
			// each pass puts it back, without allocating.
			name := http.CanonicalHeaderKey(gateway.HeaderAPIKey)
			reqs := make([]*http.Request, 64)
			vals := make([][]string, len(reqs))
			for i := range reqs {
				reqs[i] = httptest.NewRequest("POST", "/v1/chat/completions", nil)
				vals[i] = []string{st.keys[i*97%len(st.keys)]}
			}
			w := httptest.NewRecorder()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r := reqs[i%len(reqs)]
				r.Header[name] = vals[i%len(reqs)]
				h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
				i++
			}
		})
	}
}

// BenchmarkOpenLarge times Open of a SQLite store holding 100,000 API
// keys and 10,000 configs (reported as open-ms).
func BenchmarkOpenLarge(b *testing.B) {
	ctx := context.Background()
	dsn := sqliteDSN(b)
	var f admin.File
	for i := range 100000 {
		f.APIKeys = append(f.APIKeys, admin.KeyEntry{ID: fmt.Sprintf("key-%d", i), Key: fmt.Sprintf("gw-%d", i),
			WorkspaceID: fmt.Sprintf("ws-%d", i%100), Metadata: map[string]string{"team": "t"}})
	}
	for i := range 10000 {
		f.Configs = append(f.Configs, gateway.SavedConfig{ID: fmt.Sprintf("pc-%d", i), WorkspaceID: fmt.Sprintf("ws-%d", i%100),
			Config: json.RawMessage(`{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk-` + fmt.Sprint(i) + `"},{"provider":"anthropic","api_key":"sk-ant"}]}`)})
	}
	s := openStore(b, dsn, sqlstore.Options{})
	if err := s.Load(ctx, &f); err != nil {
		b.Fatal(err)
	}
	s.Close()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		s, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MasterKey: testKey, RefreshInterval: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		s.Close()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "open-ms")
}

// BenchmarkPropagation makes 100 changes through one replica and times
// until each is in force on another polling at the default interval
// (reported as p50-ms and p99-ms), on SQLite and on Postgres.
func BenchmarkPropagation(b *testing.B) {
	for _, backend := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", sqliteDSN}, {"postgres", postgresDSN}} {
		b.Run(backend.name, func(b *testing.B) {
			ctx := context.Background()
			dsn := backend.dsn(b)
			a := openStore(b, dsn, sqlstore.Options{})
			r, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MasterKey: testKey}) // the default interval
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			var took []time.Duration
			for b.Loop() {
				took = took[:0]
				for i := range 100 {
					// Writes land at random points of the other replica's
					// poll interval, as a person's would.
					time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
					k := &gateway.APIKey{ID: fmt.Sprintf("k-%d", i), Digest: gateway.HashAPIKey(fmt.Sprintf("gw-%d-%d", b.N, i))}
					if err := a.PutAPIKey(ctx, k); err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					for {
						if _, err := r.APIKey(ctx, k.Digest); err == nil {
							break
						}
						time.Sleep(time.Millisecond)
					}
					took = append(took, time.Since(start))
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
