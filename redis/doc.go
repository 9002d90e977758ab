// Package redis keeps the gateway's rate-limit buckets and response cache
// in Redis, so that several gateway replicas share them: a policy of 1,000
// requests per hour admits 1,000 requests across all replicas, and an
// answer cached by one replica is served by the others.
//
// NewLimiter returns a gateway.Limiter and NewCache a gateway.Cache; pass
// them in gateway.Options. Both take any go-redis UniversalClient (a
// single server, Sentinel or Cluster) and never close it.
//
// The two fail differently when Redis does: the Limiter returns the error
// and the gateway refuses the request with a 500 (it fails closed, so an
// outage never lifts the limits), while the gateway treats a Cache error
// as a miss and serves the request from the provider (it fails open).
// Configure the client's DialTimeout, DialerRetries, ReadTimeout and
// MaxRetries to bound what an outage costs each request.
//
// Security: bucket keys hold policy ids and the values of group-by keys
// (API key ids, workspace ids, metadata values), never gateway API keys or
// provider credentials; cache entries hold provider responses in clear.
// Restrict access to the Redis database as you would to those responses.
package redis
