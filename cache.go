package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Cache stores complete provider responses for the response cache. Keys
// are opaque strings of at most 64 bytes, already partitioned by
// workspace, provider, upstream URL, credential, request and cache
// namespace; a Cache need not look into them. Implementations must be safe
// for concurrent use. Get returns ErrCacheMiss (possibly wrapped) for a
// key it does not hold or holds no longer; any other error is logged and
// treated as a miss. The gateway never modifies a *CachedResponse it
// passed to Put or received from Get.
type Cache interface {
	Get(ctx context.Context, key string) (*CachedResponse, error)
	Put(ctx context.Context, key string, res *CachedResponse, ttl time.Duration) error
}

// ErrCacheMiss is returned by Cache.Get for a key it does not hold.
var ErrCacheMiss = errors.New("gateway: cache miss")

// CachedResponse is a complete provider response: status 200, the
// provider's headers (hop-by-hop, Set-Cookie and x-gateway-* headers
// removed) and the whole body. A streamed response's body is its complete
// SSE stream, ended by data: [DONE].
type CachedResponse struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

// size is what an entry costs a MemoryCache, roughly.
func (r *CachedResponse) size() int64 {
	n := int64(len(r.Body)) + 64
	for k, vs := range r.Header {
		n += int64(len(k))
		for _, v := range vs {
			n += int64(len(v)) + 16
		}
	}
	return n
}

// Defaults of MemoryCache.
const (
	defaultCacheEntries = 10000
	defaultCacheBytes   = 256 << 20
	defaultCacheMaxAge  = 7 * 24 * time.Hour

	// cacheFillTimeout bounds a shared cache fill, which no one caller's
	// cancellation stops (it ends when its last caller has gone).
	cacheFillTimeout = 5 * time.Minute
)

// MemoryCache is the default Cache: an in-memory LRU, bounded by entries
// and by bytes, whose entries each expire after the ttl they were put with.
// The zero value is ready to use with the defaults. It is safe for
// concurrent use. Its fields must not change after first use.
//
// Entries are kept in a golang-lru/v2 expirable.LRU without a cache-wide
// TTL (entries carry their own expiry, checked on Get), so no cleanup
// goroutine runs: an expired entry is dropped when it is next looked up or
// when it becomes the least recently used.
type MemoryCache struct {
	// MaxEntries bounds the number of entries. Zero means 10,000.
	MaxEntries int

	// MaxBytes bounds the total size of bodies and headers kept; a single
	// response larger than a quarter of it is not stored. Zero means
	// 256 MiB.
	MaxBytes int64

	once sync.Once
	mu   sync.Mutex // guards lru and size: every call into lru holds it
	lru  *expirable.LRU[string, *memoryEntry]
	size int64
}

type memoryEntry struct {
	res     *CachedResponse
	expires time.Time
	size    int64
}

var _ Cache = (*MemoryCache)(nil)

func (c *MemoryCache) init() {
	c.once.Do(func() {
		n := c.MaxEntries
		if n <= 0 {
			n = defaultCacheEntries
		}
		if c.MaxBytes <= 0 {
			c.MaxBytes = defaultCacheBytes
		}
		// onEvict runs inside lru calls, which all hold c.mu.
		c.lru = expirable.NewLRU[string, *memoryEntry](n, func(_ string, e *memoryEntry) { c.size -= e.size }, 0)
	})
}

// Get implements Cache.
func (c *MemoryCache) Get(_ context.Context, key string) (*CachedResponse, error) {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key)
	if !ok {
		return nil, ErrCacheMiss
	}
	if !time.Now().Before(e.expires) {
		c.lru.Remove(key)
		return nil, ErrCacheMiss
	}
	return e.res, nil
}

// Put implements Cache. A ttl ≤ 0 stores nothing.
func (c *MemoryCache) Put(_ context.Context, key string, res *CachedResponse, ttl time.Duration) error {
	c.init()
	size := res.size() + int64(len(key))
	if ttl <= 0 || size > c.MaxBytes/4 {
		return nil
	}
	e := &memoryEntry{res: res, expires: time.Now().Add(ttl), size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key) // Add does not report the value it replaces
	c.lru.Add(key, e)
	c.size += size
	for c.size > c.MaxBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
	return nil
}
