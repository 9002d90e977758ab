package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/modelgateway/gateway"
	"github.com/modelgateway/gateway/budget"
	"github.com/modelgateway/gateway/redis"
	goredis "github.com/redis/go-redis/v9"
)

// redisPingTimeout bounds the check that the -redis server answers at
// start-up.
const redisPingTimeout = 5 * time.Second

// openRedis connects to the Redis server rawURL names (redis://,
// rediss:// or unix://, with go-redis's parameters) and checks that it
// answers, so that a server started with an unreachable Redis fails at
// once rather than refusing its first rate-limited request. Its errors
// name the server's address, never the URL, which may hold a password.
// The caller closes the client, after the gateway.
func openRedis(ctx context.Context, rawURL string) (*goredis.Client, error) {
	opts, err := goredis.ParseURL(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // it quotes the URL
			err = ue.Err
		}
		return nil, fmt.Errorf("gateway: -redis: want a URL such as redis://HOST:PORT/DB: %w", err)
	}
	client := goredis.NewClient(opts)
	ctx, cancel := context.WithTimeout(ctx, redisPingTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("gateway: -redis: the Redis server at %s does not answer: %w", opts.Addr, err)
	}
	return client, nil
}

// setRedis makes o keep its rate-limit buckets, its response cache and
// its circuit breakers, and b its budget counters, in the Redis of
// client, shared with every replica that uses it.
func setRedis(o *gateway.Options, b *budget.Options, client goredis.UniversalClient) {
	o.Limiter = redis.NewLimiter(client, redis.LimiterOptions{})
	o.Breakers = redis.NewBreakers(client, redis.BreakersOptions{})
	b.Counter = redis.NewBudget(client, redis.BudgetOptions{})
	o.Cache = redis.NewCache(client, redis.CacheOptions{})
}
