package redis_test

import (
	"net/http"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/memstore"
	gwredis "github.com/modelgateway/gateway/redis"
)

// Every replica of the gateway is built the same way, on the same Redis:
// they then share rate limits and cached responses.
func Example() {
	client := goredis.NewClient(&goredis.Options{
		Addr: "127.0.0.1:6379",
		// Bound what an outage of Redis costs each request.
		DialTimeout:   200 * time.Millisecond,
		DialerRetries: 1,
		ReadTimeout:   200 * time.Millisecond,
		WriteTimeout:  200 * time.Millisecond,
		MaxRetries:    1,
	})
	defer client.Close()

	store := memstore.New() // in production, a store every replica shares
	gw := gateway.New(gateway.Options{
		Keys:        store,
		VirtualKeys: store,
		Configs:     store,
		Policies:    store,
		Limiter:     gwredis.NewLimiter(client, gwredis.LimiterOptions{}),
		Cache:       gwredis.NewCache(client, gwredis.CacheOptions{MaxEntryBytes: 4 << 20}),
	})
	defer gw.Close()

	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: gw}
	_ = srv // srv.ListenAndServe()
}
