// Package uidgen is the Go client of the uidgen ID service (uidgen serve). It takes a
// range of a segment tag's IDs per call, and snowflake IDs in batches, and hands them out
// from memory, with failover between servers (clients/PROTOCOL.md).
package uidgen

import (
	"context"
	"errors"
	"math/rand"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Client hands out IDs; one Client is safe for any number of goroutines.
type Client struct {
	cfg       config
	servers   []*server
	cur       atomic.Int64 // the server calls start at: the last one that answered
	http      *http.Client
	failovers atomic.Uint64

	mu     sync.Mutex // orders creating a tag against Close
	closed atomic.Bool
	tags   sync.Map // tag → *tagState; read without a lock on the fast path
	flakes flakeState

	// Background fetches run on bg, so a caller giving up (its ctx) does not waste a
	// fetch others wait for; wg lets Close wait for them before giving ranges back.
	bg   context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New makes a client of the given servers (host:port or http(s):// base URLs).
func New(servers []string, opts ...Option) (*Client, error) {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, errors.New("uidgen: no server given")
	}
	c := &Client{cfg: cfg}
	for _, s := range servers {
		base, err := baseURL(s)
		if err != nil {
			return nil, err
		}
		c.servers = append(c.servers, &server{base: base})
	}
	start := cfg.start
	if start < 0 || start >= len(c.servers) {
		// A random start spreads many clients over the servers.
		start = rand.New(rand.NewSource(time.Now().UnixNano())).Intn(len(c.servers))
	}
	c.cur.Store(int64(start))
	// Timeouts come from each call's context, per attempt; the transport is our own so
	// Close can drop its idle connections.
	c.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	c.bg, c.stop = context.WithCancel(context.Background())
	return c, nil
}

// Failovers counts the calls moved from a failing server to another.
func (c *Client) Failovers() uint64 { return c.failovers.Load() }

// NextID hands out the next ID of tag.
func (c *Client) NextID(ctx context.Context, tag string) (uint64, error) {
	t, err := c.tag(tag)
	if err != nil {
		return 0, err
	}
	first, _, err := t.take(ctx, 1)
	return first, err
}

// NextIDs hands out n increasing IDs of tag. On an error the IDs already taken are
// dropped (a gap, never a repeat).
func (c *Client) NextIDs(ctx context.Context, tag string, n int) ([]uint64, error) {
	if n < 0 {
		return nil, errors.New("uidgen: a negative count")
	}
	t, err := c.tag(tag)
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, 0, n)
	for len(ids) < n {
		// Chunks keep one atomic add far below the seal Close sets.
		want := uint64(n - len(ids))
		if want > maxRange {
			want = maxRange
		}
		first, got, err := t.take(ctx, want)
		if err != nil {
			return nil, err
		}
		for i := uint64(0); i < got; i++ {
			ids = append(ids, first+i)
		}
	}
	return ids, nil
}

func (c *Client) tag(name string) (*tagState, error) {
	if name == "" {
		return nil, errors.New("uidgen: an empty tag")
	}
	if v, ok := c.tags.Load(name); ok {
		return v.(*tagState), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	v, _ := c.tags.LoadOrStore(name, &tagState{c: c, name: name, size: c.cfg.minCount})
	return v.(*tagState), nil
}

// fetch is one background request that callers may wait for.
type fetch struct {
	done chan struct{}
	err  error // set before done is closed
}

// Close gives back the unused part of each tag's ranges (PROTOCOL.md item 6): the next
// range whole, then the current range's tail, each to the server that handed it out.
// Nothing is handed out afterwards. Fetches in flight are waited for until ctx ends, so
// what they bring is given back too. The error, if any, is a *GivebackError.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return nil
	}
	c.closed.Store(true)
	c.mu.Unlock()
	// Each state's lock is passed once, so a fetch started before it saw closed has been
	// added to wg before the Wait below.
	var tags []*tagState
	c.tags.Range(func(_, v interface{}) bool {
		t := v.(*tagState)
		t.mu.Lock()
		t.mu.Unlock() //nolint:staticcheck // a barrier, see above
		tags = append(tags, t)
		return true
	})
	c.flakes.seal()
	waited := make(chan struct{})
	go func() { c.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		c.stop()
		<-waited
	}
	c.stop()

	var failed []error
	for _, t := range tags {
		for _, g := range t.seal() {
			if err := c.giveBack(ctx, t.name, g); err != nil {
				failed = append(failed, err)
			}
		}
	}
	c.http.CloseIdleConnections()
	if len(failed) > 0 {
		return &GivebackError{Errors: failed}
	}
	return nil
}
