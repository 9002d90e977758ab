package redis

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelgateway/gateway"
)

// DefaultCachePrefix is the prefix of a Cache's Redis keys when
// CacheOptions.Prefix is empty.
const DefaultCachePrefix = "gateway:cache:"

// defaultMaxEntryBytes is CacheOptions.MaxEntryBytes when zero.
const defaultMaxEntryBytes = 8 << 20

// CacheOptions configure a Cache. The zero value is ready to use.
type CacheOptions struct {
	// Prefix is put before every key in Redis, so that several gateways
	// (or other applications) can share one database. Empty means
	// DefaultCachePrefix.
	Prefix string

	// MaxEntryBytes is the largest encoded entry (body, headers and a
	// few bytes more) that Put stores; a larger response is silently
	// not stored, since one huge value stalls a Redis server while it is
	// written and read. Zero means 8 MiB.
	MaxEntryBytes int
}

// Cache is a gateway.Cache whose entries live in Redis, so that every
// gateway replica using the same Redis shares one response cache.
//
// An entry is one string value, written with SET … PX: Redis itself
// expires it after the ttl it was put with (rounded up to the
// millisecond), and evicts it earlier if the server's maxmemory-policy
// says so. The value is a compact binary encoding of the status, the
// headers and the body (the body is stored as it is, not base64). Keys
// are the prefix and the gateway's cache key (a key longer than 128
// bytes, or starting with '#', is replaced by '#' and its hex SHA-256).
// Entries are not encrypted: the responses the cache holds are as
// readable as the Redis database is, so restrict access to it.
//
// Failures: Get returns gateway.ErrCacheMiss for a key Redis does not
// hold, and any other error (unreachable, timeout, an entry that does not
// decode) as it is, wrapped. The gateway logs such an error and treats it
// as a miss: the request goes to the provider and the caller notices
// nothing but the latency. A Put that fails is logged and dropped. So an
// outage of Redis never fails requests; bound what it costs each of them
// with the client's DialTimeout, DialerRetries, ReadTimeout and
// MaxRetries.
//
// A Cache is safe for concurrent use, by any number of goroutines and
// processes. It holds no state besides the client and never closes it.
// A *gateway.CachedResponse returned by Get is new and the caller's own.
type Cache struct {
	client   goredis.UniversalClient
	prefix   string
	maxEntry int
}

var _ gateway.Cache = (*Cache)(nil)

// NewCache returns a Cache keeping its entries in the Redis that client
// talks to. It panics if client is nil.
func NewCache(client goredis.UniversalClient, opts CacheOptions) *Cache {
	if client == nil {
		panic("gateway: redis: NewCache with a nil client")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultCachePrefix
	}
	if opts.MaxEntryBytes <= 0 {
		opts.MaxEntryBytes = defaultMaxEntryBytes
	}
	return &Cache{client: client, prefix: opts.Prefix, maxEntry: opts.MaxEntryBytes}
}

// Get implements gateway.Cache.
func (c *Cache) Get(ctx context.Context, key string) (*gateway.CachedResponse, error) {
	v, err := c.client.Get(ctx, redisKey(c.prefix, key)).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, gateway.ErrCacheMiss
	}
	if err != nil {
		return nil, fmt.Errorf("gateway: redis cache: %w", err)
	}
	res, err := decodeEntry(v)
	if err != nil {
		return nil, fmt.Errorf("gateway: redis cache: key %q: %w", key, err)
	}
	return res, nil
}

// Put implements gateway.Cache. A ttl ≤ 0, or an entry larger than
// MaxEntryBytes, stores nothing.
func (c *Cache) Put(ctx context.Context, key string, res *gateway.CachedResponse, ttl time.Duration) error {
	if ttl <= 0 {
		return nil
	}
	v := encodeEntry(res, c.maxEntry)
	if v == nil {
		return nil
	}
	ttl = (ttl + time.Millisecond - 1).Truncate(time.Millisecond)
	if err := c.client.Set(ctx, redisKey(c.prefix, key), v, ttl).Err(); err != nil {
		return fmt.Errorf("gateway: redis cache: %w", err)
	}
	return nil
}

// entryVersion is the first byte of an encoded entry. An entry of another
// version does not decode, and counts as a miss.
const entryVersion = 1

// encodeEntry returns the encoding of res: the version byte, then as
// uvarints the status and the number of header names, for each name its
// length, the name, the number of values and each value's length and
// bytes; the rest is the body. It returns nil when the entry would exceed
// limit bytes.
func encodeEntry(res *gateway.CachedResponse, limit int) []byte {
	if len(res.Body) > limit {
		return nil
	}
	n := 1 + 2*binary.MaxVarintLen64 + len(res.Body)
	for k, vs := range res.Header {
		n += 2*binary.MaxVarintLen64 + len(k)
		for _, v := range vs {
			n += binary.MaxVarintLen64 + len(v)
		}
	}
	b := make([]byte, 0, n)
	b = append(b, entryVersion)
	b = binary.AppendUvarint(b, uint64(res.Status))
	b = binary.AppendUvarint(b, uint64(len(res.Header)))
	for k, vs := range res.Header {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	b = append(b, res.Body...)
	if len(b) > limit {
		return nil
	}
	return b
}

// errCorruptEntry is returned by Get for a value that is not an entry of
// this version.
var errCorruptEntry = errors.New("gateway: redis cache: entry does not decode")

// decodeEntry decodes an entry written by encodeEntry. Header names and
// values are substrings of s; the body is a copy.
func decodeEntry(s string) (*gateway.CachedResponse, error) {
	d := entryDecoder{s: s}
	if len(s) == 0 || s[0] != entryVersion {
		return nil, errCorruptEntry
	}
	d.s = s[1:]
	status := d.uvarint()
	nk := d.uvarint()
	if d.err || status < 100 || status > 999 || nk > uint64(len(d.s)/2) {
		return nil, errCorruptEntry
	}
	h := make(http.Header, nk)
	for range nk {
		k := d.str()
		nv := d.uvarint()
		if d.err || nv > uint64(len(d.s)) {
			return nil, errCorruptEntry
		}
		vs := make([]string, nv)
		for i := range vs {
			vs[i] = d.str()
		}
		if d.err {
			return nil, errCorruptEntry
		}
		h[k] = vs
	}
	return &gateway.CachedResponse{Status: int(status), Header: h, Body: []byte(d.s)}, nil
}

// entryDecoder reads uvarints and length-prefixed strings from s, setting
// err on the first malformed or truncated one.
type entryDecoder struct {
	s   string
	err bool
}

func (d *entryDecoder) uvarint() uint64 {
	var x uint64
	var shift uint
	for i := 0; i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		c := d.s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			d.s = d.s[i+1:]
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.err = true
	return 0
}

func (d *entryDecoder) str() string {
	n := d.uvarint()
	if d.err || n > uint64(len(d.s)) {
		d.err = true
		return ""
	}
	v := d.s[:n]
	d.s = d.s[n:]
	return v
}
