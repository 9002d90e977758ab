package redis_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgateway/gateway"
	gwredis "github.com/modelgateway/gateway/redis"
)

// BenchmarkPing is the bare round trip to the server, the baseline of the
// benchmarks below.
func BenchmarkPing(b *testing.B) {
	client := startRedis(b).client(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := client.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLimiterTake measures one admission decision: one EVALSHA.
func BenchmarkLimiterTake(b *testing.B) {
	srv := startRedis(b)
	l := gwredis.NewLimiter(srv.client(b), gwredis.LimiterOptions{Prefix: srv.prefix})
	ctx := context.Background()
	lim := gateway.Limit{Value: 1e15, Per: time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Take(ctx, "0123e4567-e89b-12d3-a456-426614174000\x006:key-01", lim, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLimiterTakeParallel measures admission decisions on many
// buckets from every CPU, through one client.
func BenchmarkLimiterTakeParallel(b *testing.B) {
	srv := startRedis(b)
	l := gwredis.NewLimiter(srv.client(b), gwredis.LimiterOptions{Prefix: srv.prefix})
	ctx := context.Background()
	lim := gateway.Limit{Value: 1e15, Per: time.Hour}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.Take(ctx, "policy\x00"+string(rune('a'+i%26)), lim, 1); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkCacheGet measures one lookup of a 2 KiB chat completion.
func BenchmarkCacheGet(b *testing.B) {
	srv := startRedis(b)
	c := gwredis.NewCache(srv.client(b), gwredis.CacheOptions{Prefix: srv.prefix})
	ctx := context.Background()
	res := &gateway.CachedResponse{Status: 200, Header: http.Header{
		"Content-Type":         {"application/json"},
		"Openai-Processing-Ms": {"321"},
		"Openai-Version":       {"2020-10-01"},
		"X-Request-Id":         {"req_0123456789abcdef"},
	}, Body: []byte(`{"id":"chatcmpl-1","choices":[{"message":{"content":"` + strings.Repeat("x", 2000) + `"}}]}`)}
	key := strings.Repeat("ab", 32)
	if err := c.Put(ctx, key, res, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(res.Body)))
	for b.Loop() {
		if _, err := c.Get(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}
