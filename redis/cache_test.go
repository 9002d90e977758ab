package redis_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modelgateway/gateway"
	gwredis "github.com/modelgateway/gateway/redis"
)

func TestCacheRoundTrip(t *testing.T) {
	srv := startRedis(t)
	c := gwredis.NewCache(srv.client(t), gwredis.CacheOptions{Prefix: srv.prefix})
	ctx := context.Background()
	tests := []struct {
		name string
		res  *gateway.CachedResponse
		want *gateway.CachedResponse // nil: res
	}{
		{name: "json answer", res: &gateway.CachedResponse{Status: 200,
			Header: http.Header{"Content-Type": {"application/json"}, "Openai-Processing-Ms": {"123"}},
			Body:   []byte(`{"id":"chatcmpl-1","choices":[{"message":{"content":"hi"}}]}`)}},
		{name: "stream with repeated headers and binary-safe body", res: &gateway.CachedResponse{Status: 200,
			Header: http.Header{"Content-Type": {"text/event-stream"}, "Vary": {"Accept", "Accept-Encoding", ""}},
			Body:   []byte("data: {\"x\":\"\x00\xff\"}\n\ndata: [DONE]\n\n")}},
		{name: "empty body and no headers", res: &gateway.CachedResponse{Status: 200},
			want: &gateway.CachedResponse{Status: 200, Header: http.Header{}, Body: []byte{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Put(ctx, tt.name, tt.res, time.Hour); err != nil {
				t.Fatal(err)
			}
			got, err := c.Get(ctx, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = tt.res
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Get after Put (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := c.Get(ctx, "never put"); !errors.Is(err, gateway.ErrCacheMiss) {
		t.Fatalf("Get of a key never put: %v, want ErrCacheMiss", err)
	}
}

// TestCacheExpiry: Redis expires an entry after the ttl it was put with.
func TestCacheExpiry(t *testing.T) {
	srv := startRedis(t)
	client := srv.client(t)
	c := gwredis.NewCache(client, gwredis.CacheOptions{Prefix: srv.prefix})
	ctx := context.Background()
	res := &gateway.CachedResponse{Status: 200, Body: []byte("soon gone")}
	if err := c.Put(ctx, "k", res, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if pttl := client.PTTL(ctx, srv.prefix+"k").Val(); pttl <= 0 || pttl > 300*time.Millisecond {
		t.Fatalf("entry PTTL %v, want in (0, 300ms]", pttl)
	}
	if _, err := c.Get(ctx, "k"); err != nil {
		t.Fatalf("Get before the ttl: %v", err)
	}
	start := time.Now()
	waitFor(t, "the entry expires", func() bool {
		_, err := c.Get(ctx, "k")
		if err != nil && !errors.Is(err, gateway.ErrCacheMiss) {
			t.Fatal(err)
		}
		return err != nil
	})
	if time.Since(start) > 5*time.Second {
		t.Fatalf("entry expired %v after the Put, want about 300ms", time.Since(start))
	}
	// A sub-millisecond ttl is rounded up, not dropped: the entry is
	// stored for 1ms.
	if err := c.Put(ctx, "brief", res, time.Microsecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 1µs entry expires", func() bool { return client.Exists(ctx, srv.prefix+"brief").Val() == 0 })
}

// TestCacheNotStored: entries Put does not store, and keys it stores them
// under.
func TestCacheNotStored(t *testing.T) {
	srv := startRedis(t)
	client := srv.client(t)
	ctx := context.Background()
	small := &gateway.CachedResponse{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{}`)}
	big := &gateway.CachedResponse{Status: 200, Body: []byte(strings.Repeat("x", 1000))}
	long := strings.Repeat("k", 200)
	tests := []struct {
		name     string
		opts     gwredis.CacheOptions
		key      string
		res      *gateway.CachedResponse
		ttl      time.Duration
		wantKeys []string
	}{
		{"one byte over MaxEntryBytes", gwredis.CacheOptions{Prefix: srv.prefix + "a:", MaxEntryBytes: 1003}, "k", big, time.Hour, nil},
		{"headers count towards MaxEntryBytes", gwredis.CacheOptions{Prefix: srv.prefix + "b:", MaxEntryBytes: 10}, "k", small, time.Hour, nil},
		{"at MaxEntryBytes", gwredis.CacheOptions{Prefix: srv.prefix + "c:", MaxEntryBytes: 1004}, "k", big, time.Hour, []string{srv.prefix + "c:k"}},
		{"zero ttl", gwredis.CacheOptions{Prefix: srv.prefix + "d:"}, "k", small, 0, nil},
		{"long key", gwredis.CacheOptions{Prefix: srv.prefix + "e:"}, long, small, time.Hour, []string{srv.prefix + "e:#" + sha256Hex(long)}},
		{"default prefix", gwredis.CacheOptions{}, "gwtest-" + srv.prefix, small, time.Hour, []string{gwredis.DefaultCachePrefix + "gwtest-" + srv.prefix}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := gwredis.NewCache(client, tt.opts)
			if err := c.Put(ctx, tt.key, tt.res, tt.ttl); err != nil {
				t.Fatalf("Put: %v, want no error", err)
			}
			t.Cleanup(func() { client.Del(ctx, tt.wantKeys...) })
			_, err := c.Get(ctx, tt.key)
			if stored := err == nil; stored != (tt.wantKeys != nil) {
				t.Fatalf("Get after Put: %v; want stored %t", err, tt.wantKeys != nil)
			}
			for _, k := range tt.wantKeys {
				if client.Exists(ctx, k).Val() != 1 {
					t.Errorf("key %q not in Redis", k)
				}
			}
		})
	}
}

// TestCacheErrors: a value that is not an entry, and a Redis that is
// down, are errors that are not misses (the gateway logs them, then
// treats them as misses).
func TestCacheErrors(t *testing.T) {
	srv := startRedis(t)
	client := srv.client(t)
	ctx := context.Background()
	client.Set(ctx, srv.prefix+"junk", "not an entry", time.Hour)
	client.Set(ctx, srv.prefix+"cut", "\x01\xc8\x01\x05\x03", time.Hour)
	for _, tt := range []struct {
		name, key string
		c         *gwredis.Cache
	}{
		{"not an entry", "junk", gwredis.NewCache(client, gwredis.CacheOptions{Prefix: srv.prefix})},
		{"truncated entry", "cut", gwredis.NewCache(client, gwredis.CacheOptions{Prefix: srv.prefix})},
		{"redis down", "k", gwredis.NewCache(downClient(t), gwredis.CacheOptions{})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.c.Get(ctx, tt.key)
			if err == nil || errors.Is(err, gateway.ErrCacheMiss) || res != nil {
				t.Fatalf("Get: %v, %v; want an error other than ErrCacheMiss", res, err)
			}
			if !strings.HasPrefix(err.Error(), "gateway: ") {
				t.Errorf("error %q does not start with gateway:", err)
			}
		})
	}
	if err := gwredis.NewCache(downClient(t), gwredis.CacheOptions{}).Put(ctx, "k", &gateway.CachedResponse{Status: 200}, time.Hour); err == nil {
		t.Fatal("Put with Redis down: no error")
	}
}
