package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"

	"github.com/modelgateway/gateway/observe"
	"github.com/ncruces/go-sqlite3"
)

// percentileConn returns a connection of the SQLite database with
// gw_percentiles registered: an aggregate of integers whose value is the
// text "p50 p90 p99" of observe.Percentile (nearest rank, as Postgres's
// percentile_disc), NULL over no row. Registering on the connection at
// hand, each time, keeps openDB unaware of analytics; it costs a few
// microseconds.
func (s *Store) percentileConn(ctx context.Context) (*sql.Conn, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(interface{ Raw() *sqlite3.Conn })
		if !ok {
			return errors.New("not a SQLite connection")
		}
		return c.Raw().CreateWindowFunction("gw_percentiles", 1, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS,
			func() sqlite3.AggregateFunction { return new(percentiles) })
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// percentiles is gw_percentiles' state: the values of its group.
type percentiles struct{ vals []int64 }

func (p *percentiles) Step(_ sqlite3.Context, arg ...sqlite3.Value) {
	p.vals = append(p.vals, arg[0].Int64())
}

func (p *percentiles) Value(ctx sqlite3.Context) {
	if len(p.vals) == 0 {
		ctx.ResultNull()
		return
	}
	slices.Sort(p.vals)
	b := strconv.AppendInt(nil, observe.Percentile(p.vals, 0.5), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, observe.Percentile(p.vals, 0.9), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, observe.Percentile(p.vals, 0.99), 10)
	ctx.ResultText(string(b))
}
